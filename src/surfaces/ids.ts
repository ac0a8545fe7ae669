// The ids herd gives what it makes up on a client's behalf (a completion, a
// message, a response and its items, a tool call), in the style OpenAI and
// Anthropic both use: a prefix naming the kind ("chatcmpl-", "msg_", "toolu_",
// "call_", …) and 24 random hex digits.

export function randomId(prefix: string): string {
  return `${prefix}${crypto.randomUUID().replaceAll("-", "").slice(0, 24)}`;
}
