// Errors as JSON, the shape Ollama and herd's own routes use: {"error": "..."}.
// Surfaces with other wire formats (OpenAI, Anthropic) bring their own.
export function jsonError(status: number, message: string, headers: Record<string, string> = {}): Response {
  return Response.json({ error: message }, { status, headers });
}
