// A chat request as a surface decodes it, for the stages' unit tests.
import type { Message } from "../core/conversation.ts";
import type { InferenceRequest } from "../core/request.ts";

export function chatRequest(fields: Partial<InferenceRequest> & { messages?: Message[] } = {}): InferenceRequest {
  return {
    surface: "anthropic",
    kind: "chat",
    path: "/api/chat",
    model: "claude-sonnet-4-5",
    messages: [{ role: "user", content: "hello" }],
    tools: [],
    options: {},
    extra: {},
    fallbackModels: [],
    strict: false,
    needs: { vision: false, tools: false },
    promptTokens: 10,
    stream: false,
    signal: new AbortController().signal,
    ...fields,
  };
}
