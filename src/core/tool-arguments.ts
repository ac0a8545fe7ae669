// A tool call's arguments are a JSON object. Ollama's lines and Anthropic's
// tool_use carry the object itself; OpenAI's wire (Chat Completions, Responses,
// and the MLX servers that speak it) carries the object as JSON text. Either
// may arrive on either side, so both readings live here.

type Json = Record<string, unknown>;

/** The arguments as a value: JSON text parsed, anything else as it is; none (or blank text) is {}; null when the text is not JSON. */
export function parseArguments(args: unknown): unknown {
  if (typeof args !== "string") return args ?? {};
  try {
    return args.trim() ? JSON.parse(args) : {};
  } catch {
    return null;
  }
}

/** The arguments as the JSON object they must be, from the object or its JSON text; null when they are not one. */
export function argumentsObject(args: unknown): Json | null {
  const value = parseArguments(args);
  return value && typeof value === "object" && !Array.isArray(value) ? (value as Json) : null;
}

/** The arguments as OpenAI's wire carries them: JSON text (text is passed on as it is). */
export function argumentsText(args: unknown): string {
  return typeof args === "string" ? args : JSON.stringify(args ?? {});
}
