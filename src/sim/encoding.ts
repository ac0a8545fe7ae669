// Serializers that reproduce each backend's exact bytes: Ollama is Go
// (encoding/json, RFC 3339 nanosecond timestamps), mlx_lm.server is Python
// (json.dumps with its default separators and ASCII escaping).

// Go's encoding/json escapes <, > and & (HTML safety) and U+2028/U+2029.
export function goJson(value: unknown): string {
  return JSON.stringify(value).replace(/[<>&\u2028\u2029]/g, unicodeEscape);
}

// Python's json.dumps: ", " and ": " separators; ensure_ascii escapes
// everything above U+007F (mlx_lm passes ensure_ascii=False for tool-call
// arguments, which are then escaped again by the outer dumps).
export function pyJson(value: unknown, ensureAscii = true): string {
  if (value === null || value === undefined) return "null";
  if (typeof value === "string") {
    const s = JSON.stringify(value);
    return ensureAscii ? s.replace(/[\u0080-\uffff]/g, unicodeEscape) : s;
  }
  if (Array.isArray(value)) return `[${value.map((v) => pyJson(v, ensureAscii)).join(", ")}]`;
  if (typeof value === "object") {
    const fields = Object.entries(value).filter(([, v]) => v !== undefined);
    return `{${fields.map(([k, v]) => `${pyJson(k, ensureAscii)}: ${pyJson(v, ensureAscii)}`).join(", ")}}`;
  }
  return JSON.stringify(value);
}

function unicodeEscape(c: string): string {
  return `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`;
}

// Go marshals time.Time as RFC 3339 with up to nine fractional digits,
// trailing zeros trimmed: "2024-07-22T20:33:28.123648Z". The default adds
// sub-millisecond digits from the monotonic clock so stamps look like Go's.
export function rfc3339Nano(epochMs: number = Date.now() + (performance.now() % 1)): string {
  const whole = Math.floor(epochMs);
  const nanos = (whole % 1000) * 1e6 + Math.floor((epochMs - whole) * 1e6);
  const fraction = nanos === 0 ? "" : `.${String(nanos).padStart(9, "0").replace(/0+$/, "")}`;
  return `${new Date(whole).toISOString().slice(0, 19)}${fraction}Z`;
}
