// The summariser context fitting is given (router/compaction.ts:Summarise): one whole chat on the
// fleet through the same pipeline as a client's, so it is queued, retried, held to its deadline
// and traced (tagged herd:compaction) like any request. The composition root wires it in.
import type { Conversation } from "../core/conversation.ts";
import type { Encoder } from "../core/encoder.ts";
import { fold } from "../core/events.ts";
import { type InferenceRequest, needsOf } from "../core/request.ts";
import { estimatePrompt } from "../core/tokens.ts";
import type { SummaryAsk } from "../router/compaction.ts";
import { type Pipeline, route } from "./route.ts";

const INSTRUCTIONS =
  "You summarise the earlier part of a conversation between a user and an assistant so that the conversation can go on without it. " +
  "Keep what later turns may need: the user's goals and constraints, decisions taken, facts, names, file paths, code identifiers and open questions. " +
  "Write the summary only, in plain prose or a short list, without preamble.";

/** compaction.ts:Summarise, on the fleet of `rt`. */
export async function summariseOnFleet(rt: Pipeline, { model, text, maxTokens }: SummaryAsk, signal: AbortSignal): Promise<string> {
  const conversation: Conversation = {
    messages: [
      { role: "system", content: INSTRUCTIONS },
      { role: "user", content: text },
    ],
    tools: [],
    options: { num_predict: maxTokens, temperature: 0 },
    extra: {},
  };
  const req: InferenceRequest = {
    ...conversation,
    surface: "ollama",
    kind: "chat",
    path: "/api/chat",
    model,
    // A thinking model would spend the reply's tokens on its reasoning: off where the model can take it.
    thinkAsk: { think: false },
    fallbackModels: [],
    strict: false,
    needs: needsOf(conversation),
    promptTokens: estimatePrompt(conversation),
    stream: false,
    signal,
  };
  const answer = textOf();
  const res = await route(rt, req, answer.encoder, { tags: ["herd:compaction"], clientIp: null, caller: null });
  const body = await res.text();
  if (!res.ok) throw new Error(body);
  if (answer.failure()) throw new Error(answer.failure()!);
  if (!body.trim()) throw new Error(`${model} answered with an empty summary`);
  return body.trim();
}

/** An encoder that writes an answer's text alone (its thinking left out), and an error as its message. */
function textOf(): { encoder: Encoder; failure(): string | null } {
  let failed: string | null = null;
  const encoder: Encoder = {
    contentType: "text/plain; charset=utf-8",
    encode: (chunk) => fold(chunk).text,
    end: () => "",
    fail: (message) => ((failed = message), ""),
    error: (status, message) => new Response(message, { status }),
  };
  return { encoder, failure: () => failed };
}
