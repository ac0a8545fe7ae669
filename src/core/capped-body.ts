// Reading a whole answer from outside (a node's Ollama, an MLX server, a node's own service) with a cap on
// its size: past the cap the read stops and the body is cancelled, which drops the connection rather than
// draining it, so no answer herd reads whole can grow its memory past the cap, whatever the sender declares.

/** The reader of a body: a fetch Response's, or herd's own HTTP/1.1 client's (backends/http1.ts). */
export interface BodyReader {
  read(): Promise<{ done: boolean; value?: Uint8Array }>;
  cancel(): Promise<void>;
}

/** How large a whole answer may be, and the setting that says so (for the error). */
export interface AnswerCap {
  bytes: number;
  setting: string;
}

/** The answer ran past its cap; the message names the cap and its setting. */
export class AnswerTooLarge extends Error {
  constructor(cap: AnswerCap) {
    super(`the node's answer ran past ${describeBytes(cap.bytes)} (${cap.setting}); herd stopped reading it and dropped the connection`);
  }
}

/** The whole body, at most `cap.bytes` of it; an AnswerTooLarge (the body cancelled) past that. */
export async function readCapped(reader: BodyReader, cap: AnswerCap): Promise<Uint8Array> {
  const parts: Uint8Array[] = [];
  let size = 0;
  for (let r = await reader.read(); !r.done; r = await reader.read()) {
    if (!r.value) continue;
    size += r.value.length;
    if (size > cap.bytes) {
      await reader.cancel().catch(() => {});
      throw new AnswerTooLarge(cap);
    }
    parts.push(r.value.slice()); // a reader may reuse its buffer
  }
  return parts.length === 1 ? parts[0]! : Buffer.concat(parts);
}

/** A fetch Response's whole body, capped: one that declares more than the cap is refused before any of it is read. */
export async function responseBytes(res: Response, cap: AnswerCap): Promise<Uint8Array> {
  if (Number(res.headers.get("content-length")) > cap.bytes) {
    await res.body?.cancel().catch(() => {});
    throw new AnswerTooLarge(cap);
  }
  return res.body ? readCapped(res.body.getReader(), cap) : new Uint8Array();
}

const utf8 = new TextDecoder();

/** The body as text, capped. */
export async function responseText(res: Response, cap: AnswerCap): Promise<string> {
  return utf8.decode(await responseBytes(res, cap));
}

/** The body as JSON, capped; a body that is not JSON throws as JSON.parse does. */
export async function responseJson(res: Response, cap: AnswerCap): Promise<unknown> {
  return JSON.parse(await responseText(res, cap));
}

function describeBytes(bytes: number): string {
  const mb = bytes / 2 ** 20;
  return mb >= 1 ? `${+mb.toFixed(2)} MB` : `${Math.round(bytes / 1024)} KB`;
}
