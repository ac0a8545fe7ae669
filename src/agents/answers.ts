// What every fleet operation returns: an HTTP status and a JSON body. REST sends
// it as is; MCP hands the same body back as the tool's result, so the two faces
// cannot drift apart.
export class Answer {
  constructor(
    readonly status: number,
    /** null only for 204. */
    readonly body: Record<string, unknown> | null,
  ) {}
}

export const answer = (body: Record<string, unknown>, status = 200) => new Answer(status, body);

/** An error in the seed's shape: `{error: code, detail}` (plus context such as sessionId). */
export const refuse = (status: number, error: string, detail: string, context: Record<string, unknown> = {}) =>
  new Answer(status, { ...context, error, detail });

export const badRequest = (detail: string) => refuse(400, "bad_request", detail);
