// Each API's error object, written with the status it goes with: Ollama's and herd's own
// {"error": "..."}, OpenAI's and Anthropic's with the type their SDKs map to an exception class.
// Low in the house, so a refusal (auth/) and every surface write the same ones.

/** Errors as Ollama and herd's own routes write them. */
export function jsonError(status: number, message: string, headers: Record<string, string> = {}): Response {
  return Response.json({ error: message }, { status, headers });
}

const OPENAI_ERRORS: Record<number, [type: string, code: string | null]> = {
  401: ["invalid_request_error", "invalid_api_key"],
  403: ["permission_error", "model_not_allowed"],
  404: ["invalid_request_error", "model_not_found"],
  413: ["invalid_request_error", "request_too_large"],
  429: ["rate_limit_error", null],
};

/** OpenAI's error object, with the type its SDKs map to an exception class; `code`, when given, instead of the status's. */
export function openaiError(status: number, message: string, headers: Record<string, string> = {}, code?: string | null): Response {
  const [type, usual] = OPENAI_ERRORS[status] ?? (status < 500 ? ["invalid_request_error", null] : ["api_error", null]);
  return Response.json({ error: { message, type, param: null, code: code === undefined ? usual : code } }, { status, headers });
}

/** Anthropic's error object, with the type its SDKs map to an exception class. */
export function anthropicError(status: number, message: string, headers: Record<string, string> = {}): Response {
  return Response.json({ type: "error", error: { type: errorType(status), message } }, { status, headers });
}

function errorType(status: number): string {
  const types: Record<number, string> = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "prompt_too_large",
    429: "rate_limit_error",
    503: "overloaded_error",
  };
  return types[status] ?? (status >= 500 ? "api_error" : "invalid_request_error");
}
