// A request's conversation as the body of a node's Ollama: the one rendering, per
// attempt (the model and the options body-rules adjusted are the attempt's). The
// Ollama client's fields herd does not model go out as they came.
import type { Conversation, Message, Options, Tool, ToolCall } from "../core/conversation.ts";

type Json = Record<string, unknown>;

/** What the rendering reads: the conversation, the Ollama route it goes to, and whether it streams. */
export type Renderable = Conversation & { path: string; stream: boolean };

export function ollamaBody(req: Renderable, model: string, options: Options = req.options): Json {
  const body: Json = { ...req.extra, model };
  if (req.messages) body.messages = req.messages.map(message);
  if (req.prompt !== undefined) body.prompt = req.prompt;
  if (req.system !== undefined) body.system = req.system;
  if (req.images) body.images = req.images;
  // /api/embeddings, Ollama's older route, reads its one text from `prompt`.
  if (req.input !== undefined) body[req.path === "/api/embeddings" ? "prompt" : "input"] = req.input;
  if (req.tools.length) body.tools = req.tools.map(functionTool);
  if (req.format !== undefined) body.format = req.format;
  if (Object.keys(options).length) body.options = options;
  if (req.think !== undefined) body.think = req.think;
  if (req.keepAlive !== undefined) body.keep_alive = req.keepAlive;
  if (req.input === undefined) body.stream = req.stream;
  return body;
}

function message(m: Message): Json {
  const out: Json = { ...m.extra, role: m.role, content: m.content };
  if (m.images) out.images = m.images;
  if (m.thinking !== undefined) out.thinking = m.thinking;
  if (m.toolCalls) out.tool_calls = m.toolCalls.map(call);
  if (m.toolName !== undefined) out.tool_name = m.toolName;
  if (m.toolCallId !== undefined) out.tool_call_id = m.toolCallId;
  return out;
}

function call({ id, name, arguments: args }: ToolCall): Json {
  return { ...(id !== undefined ? { id } : {}), function: { name, arguments: args } };
}

/** A tool as Ollama's list has it, which is OpenAI's shape too (the MLX servers take it as it is). */
export function functionTool({ name, description, parameters }: Tool): Json {
  return { type: "function", function: { name, ...(description !== undefined ? { description } : {}), ...(parameters !== undefined ? { parameters } : {}) } };
}
