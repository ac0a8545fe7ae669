// OpenAI's legacy Completions ⇄ the typed conversation, as Ollama's own /v1/completions has them
// (openai/openai.go FromCompleteRequest, ToCompletion, ToCompleteChunk and middleware/openai.go
// CompleteWriter, v0.32.15): the prompt goes to /api/generate with `suffix` and Chat Completions'
// sampling fields; the answer is `text_completion` objects, streamed as SSE chunks whose last
// carries the finish reason, then usage when asked for (`stream_options.include_usage`).
import type { Conversation } from "../core/conversation.ts";
import type { Encoder } from "../core/encoder.ts";
import { type Chunk, type DoneReason, fold } from "../core/events.ts";
import { randomId } from "./ids.ts";
import { openaiEnds, openaiUsage, samplingOptions } from "./openai-codec.ts";
import { EVENT_STREAM, sse } from "./sse.ts";

type Json = Record<string, unknown>;

/** The conversation of a Completions request, or a message naming the field that is wrong. */
export function completionConversation(body: Json): Conversation | string {
  // OpenAI takes a batch of prompts, or tokens; Ollama one prompt, as text.
  const prompt = Array.isArray(body.prompt) && body.prompt.length === 1 ? body.prompt[0] : body.prompt;
  if (prompt === undefined) return "prompt: required: the text to complete";
  if (typeof prompt !== "string") return "prompt: expected a string, or a list of one string (one prompt per request, as text)";
  if (body.suffix !== undefined && body.suffix !== null && typeof body.suffix !== "string") return "suffix: expected a string";
  if (body.echo !== undefined && body.echo !== null && typeof body.echo !== "boolean") return "echo: expected true or false";
  const options = samplingOptions(body);
  if (typeof options === "string") return options;
  return { prompt, tools: [], options, extra: body.suffix ? { suffix: body.suffix } : {} };
}

/**
 * Writes an answer's Events as text completions: an SSE chunk per chunk of text, or one object. `echo` is the
 * prompt when the client asked for it back before the completion (OpenAI's `echo`; Ollama's layer has none).
 */
export function completionEncoder(stream: boolean, includeUsage: boolean, echo: string): Encoder {
  const id = randomId("cmpl-");
  const created = Math.floor(Date.now() / 1000);
  // What is still to be sent: the echo, then (for a whole answer) every chunk's text until the end.
  let text = echo;
  const choice = (done: DoneReason | undefined) => ({ text, index: 0, logprobs: null, finish_reason: done ?? null });
  return {
    contentType: stream ? EVENT_STREAM : "application/json",
    encode(chunk: Chunk) {
      const { model } = chunk;
      const { text: piece, usage, done } = fold(chunk);
      text += piece;
      if (!stream) {
        return done ? JSON.stringify({ id, object: "text_completion", created, model, system_fingerprint: "fp_herd", choices: [choice(done)], usage: openaiUsage(usage) }) : "";
      }
      // A chunk of thinking alone has nothing to say here (Ollama's layer drops the thinking too).
      if (!text && !done) return "";
      const base = { id, object: "text_completion", created };
      let out = sse({ ...base, choices: [choice(done)], model, system_fingerprint: "fp_herd" });
      text = "";
      if (done && includeUsage) out += sse({ ...base, choices: [], model, system_fingerprint: "fp_herd", usage: openaiUsage(usage) });
      return out;
    },
    ...openaiEnds(stream),
  };
}
