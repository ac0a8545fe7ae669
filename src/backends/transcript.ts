// A transcript in seed 000's shape (text, language, chunks), from what an ASR tool gave: the JSON
// mlx-qwen3-asr's CLI writes (the node agent's service), a node agent's answer, or the result of
// an Ollama Herd node's transcription job (mlx-qwen3-asr's TranscriptionResult: text, language,
// chunks or segments). Each field is checked, as none of them is herd's own.
import type { Transcript } from "../core/media-request.ts";

/**
 * The transcript, or null without a "text". Chunks come from its "chunks" (mlx-qwen3-asr's
 * {text, start, end, chunk_index, language}), else its "segments" (Whisper's {text, start, end}),
 * each with its index and language.
 */
export function transcriptOf(raw: unknown): Transcript | null {
  const out = raw as { text?: unknown; language?: unknown; chunks?: unknown; segments?: unknown } | null;
  if (typeof out !== "object" || out === null || typeof out.text !== "string") return null;
  const language = typeof out.language === "string" && out.language ? out.language : "unknown";
  const parts: unknown[] = Array.isArray(out.chunks) ? out.chunks : Array.isArray(out.segments) ? out.segments : [];
  const seconds = (x: unknown) => (typeof x === "number" && Number.isFinite(x) ? x : 0);
  const chunks = parts
    .filter((p): p is { text: string; start?: unknown; end?: unknown; language?: unknown } => typeof (p as { text?: unknown } | null)?.text === "string")
    .map((p, i) => ({ text: p.text.trim(), start: seconds(p.start), end: seconds(p.end), chunk_index: i, language: typeof p.language === "string" && p.language ? p.language : language }));
  return { text: out.text.trim(), language, chunks };
}

/** The transcript in a node's JSON answer; null when it is not JSON or has none. */
export function transcriptIn(bytes: Uint8Array): Transcript | null {
  try {
    return transcriptOf(JSON.parse(new TextDecoder().decode(bytes)));
  } catch {
    return null;
  }
}
