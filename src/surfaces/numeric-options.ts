// Ollama's sampling `options` from a client's numeric fields, each under its
// own name in the client's API (max_tokens, max_output_tokens, top_p, …).

/** The options for [the client's name, Ollama's name, value] triples (a missing or null value is left out), or a message naming one that is not a number. */
export function numericOptions(fields: [string, string, unknown][]): Record<string, unknown> | string {
  const options: Record<string, unknown> = {};
  for (const [from, to, value] of fields) {
    if (value === undefined || value === null) continue;
    if (typeof value !== "number") return `${from}: expected a number`;
    options[to] = value;
  }
  return options;
}
