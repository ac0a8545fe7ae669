// An MLX server's answer (OpenAI chat-completion SSE chunks, or one completion
// object) as Events, with no Ollama line in between. mlx_lm reports no
// timings, so the answer's duration is herd's own measure from the call.
import { type Chunk, type Event, figure } from "../core/events.ts";
import { parseArguments } from "../core/tool-arguments.ts";

type Json = Record<string, unknown>;

export interface MlxUsage {
  /** From the call to the last byte. */
  latencyMs: number;
  promptTokens: number;
  completionTokens: number;
  /** Prompt tokens mlx_lm took from its prompt cache. */
  cachedTokens: number;
}

export class MlxEvents {
  constructor(
    /** The model the chunks name ("mlx:<repo id>"). */
    private readonly servedAs: string,
    private readonly started: number,
    /** Called once, with the finished answer's token counts. */
    private readonly onUsage: (usage: MlxUsage) => void,
  ) {}

  /** Text and thinking as they come; tool calls, the usage and the end once the server says [DONE]. */
  async *stream(sse: AsyncGenerator<string>): AsyncGenerator<Chunk> {
    // Tool calls arrive in pieces, by index: the name first, the arguments as text fragments.
    const calls: { id?: string; name: string; args: string }[] = [];
    let finish: string | null = null;
    let usage: Json | undefined;
    for await (const raw of sse) {
      if (!raw.startsWith("data:")) continue;
      const data = raw.slice(5).trim();
      if (data === "[DONE]") {
        if (calls.length) yield this.chunk(calls.map((c) => toolCall(c.id, c.name, c.args)));
        yield this.chunk(this.end(finish, usage));
        return;
      }
      let chunk: Json;
      try {
        chunk = JSON.parse(data);
      } catch {
        throw new Error(`the MLX server sent an SSE event that is not JSON: ${data.slice(0, 80)}`);
      }
      if (chunk.error) throw new Error(`the MLX server failed mid-answer: ${errorText(JSON.stringify(chunk))}`);
      if (chunk.usage) usage = chunk.usage as Json;
      const choice = (chunk.choices as Json[] | undefined)?.[0];
      if (!choice) continue;
      if (choice.finish_reason) finish = choice.finish_reason as string;
      const delta = (choice.delta as Json | undefined) ?? {};
      for (const piece of (delta.tool_calls as Json[] | undefined) ?? []) {
        const fn = (piece.function as Json | undefined) ?? {};
        const at = typeof piece.index === "number" ? piece.index : calls.length;
        calls[at] ??= { name: "", args: "" };
        if (typeof piece.id === "string") calls[at].id = piece.id;
        if (typeof fn.name === "string") calls[at].name += fn.name;
        if (typeof fn.arguments === "string") calls[at].args += fn.arguments;
      }
      const events = texts(delta);
      if (events.length) yield this.chunk(events);
    }
    // No [DONE]: the answer is incomplete, and the relay says so.
  }

  /** A whole completion: one chunk, ending the answer. */
  whole(body: Json): Chunk {
    const choice = (body.choices as Json[] | undefined)?.[0] ?? {};
    const message = (choice.message as Json | undefined) ?? {};
    const events = texts(message);
    for (const c of (message.tool_calls as Json[] | undefined) ?? []) {
      const fn = c.function as Json;
      events.push(toolCall(c.id as string | undefined, fn.name as string, fn.arguments as string));
    }
    events.push(...this.end((choice.finish_reason as string | null) ?? null, body.usage as Json | undefined));
    return this.chunk(events);
  }

  private chunk(events: Event[]): Chunk {
    return { model: this.servedAs, events };
  }

  private end(finish: string | null, usage: Json | undefined): Event[] {
    const promptTokens = figure(usage?.prompt_tokens) ?? 0;
    const completionTokens = figure(usage?.completion_tokens) ?? 0;
    const cachedTokens = figure((usage?.prompt_tokens_details as Json | undefined)?.cached_tokens) ?? 0;
    const latencyMs = performance.now() - this.started;
    this.onUsage({ latencyMs, promptTokens, completionTokens, cachedTokens });
    return [
      { type: "usage", promptTokens, completionTokens, totalNs: Math.round(latencyMs * 1e6) },
      { type: "done", reason: finish === "length" ? "length" : "stop" },
    ];
  }
}

/** A delta's (or a message's) thinking and text. */
function texts(part: Json): Event[] {
  const events: Event[] = [];
  const thinking = part.reasoning ?? part.reasoning_content;
  if (typeof thinking === "string" && thinking) events.push({ type: "thinking", text: thinking });
  if (typeof part.content === "string" && part.content) events.push({ type: "text", text: part.content });
  return events;
}

function toolCall(id: string | undefined, name: string, args: string): Event {
  return { type: "tool_call", name, arguments: parseArguments(args) ?? args /* text that is not JSON stays text */, id };
}

/** mlx_lm's errors are {"error": "..."}; some are plain text. */
export function errorText(body: string): string | null {
  try {
    const error = (JSON.parse(body) as { error?: unknown }).error;
    if (typeof error === "string") return error;
    if (error && typeof (error as Json).message === "string") return (error as Json).message as string;
  } catch {
    // not JSON
  }
  return body.trim().slice(0, 300) || null;
}
