// Anthropic's thinking settings on a local model. "adaptive" leaves thinking
// to the model (no `think` sent); "enabled" and "disabled" set Ollama's
// `think` only on a model that can think, since Ollama refuses think:true
// elsewhere. display "omitted" sends thinking blocks without their text. A
// block's signature carries its text, so a block passed back without it (as
// Claude Code does) still gives the model its earlier reasoning.

export interface ThinkingRequest {
  type: "adaptive" | "enabled" | "disabled";
  /** display "omitted" (or "updates"): blocks come back with empty text, the reasoning only in their signature. */
  omitted: boolean;
}

/** The request's `thinking`, or a message naming the field that is wrong. */
export function thinkingOf(thinking: unknown): ThinkingRequest | string {
  // Without `thinking` the API does not think: a thinking model (which Ollama lets think by default) is told not to.
  if (thinking === undefined || thinking === null) return { type: "disabled", omitted: false };
  const { type, display } = thinking as { type?: unknown; display?: unknown };
  if (type !== "enabled" && type !== "adaptive" && type !== "disabled") return `thinking.type: expected "enabled", "adaptive" or "disabled"`;
  if (display !== undefined && display !== null && typeof display !== "string") return `thinking.display: expected "summarized", "omitted" or "updates"`;
  // "updates" shows only progress notes between tool calls, which a local model's reasoning has none of apart.
  // A display mode herd does not know yet shows the thinking, as "summarized" does.
  return { type, omitted: display === "omitted" || display === "updates" };
}

/** Whether `think` is worth a lookup of the model's capabilities: only "enabled" and "disabled" set it. */
export function setsThink(thinking: ThinkingRequest): boolean {
  return thinking.type === "enabled" || thinking.type === "disabled";
}

const SIGNATURE_PREFIX = "herd.thinking.";

/** A thinking block's signature: its text, base64-encoded under a prefix that marks it as herd's. */
export function signatureOf(thinking: string): string {
  return SIGNATURE_PREFIX + Buffer.from(thinking).toString("base64");
}

/** The text of a thinking block passed back: its own, else what herd's signature carries ("" for anyone else's). */
export function thinkingText(block: { thinking?: unknown; signature?: unknown }): string {
  if (typeof block.thinking === "string" && block.thinking) return block.thinking;
  const signature = block.signature;
  if (typeof signature !== "string" || !signature.startsWith(SIGNATURE_PREFIX)) return "";
  return Buffer.from(signature.slice(SIGNATURE_PREFIX.length), "base64").toString();
}
