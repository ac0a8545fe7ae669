// The node's transcription service: POST /transcribe (multipart: audio, model, language) runs the
// Qwen3-ASR CLI once, as `COMMAND AUDIO --model M --output-format json --output-dir DIR`, reads
// the DIR/AUDIO-STEM.json it writes, and answers in seed 000's shape (X-Transcription-Time: ms).
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { Transcript } from "../core/media-request.ts";
import type { NodeEntry } from "../config/schema.ts";
import { jsonError } from "../core/wire-errors.ts";
import { type Deadline, inTempDir, OneAtATime, runCli } from "./services-cli.ts";

type TranscriptionSection = NonNullable<NodeEntry["transcription"]>;

/** The audio file keeps its extension (the CLI decodes by it), nothing else from the client's name. */
function audioFileName(name: string): string {
  const ext = /\.([A-Za-z0-9]{1,5})$/.exec(name)?.[1]?.toLowerCase() ?? "wav";
  return `audio.${ext}`;
}

export function transcriptionService(section: () => TranscriptionSection | undefined, newDeadline: (signal: AbortSignal) => Deadline) {
  const queue = new OneAtATime();
  return async (request: Request): Promise<Response> => {
    const config = section();
    if (new URL(request.url).pathname !== "/transcribe" || request.method !== "POST" || !config) return jsonError(404, "the transcription service answers POST /transcribe");
    const d = newDeadline(request.signal);
    const form = await request.formData().catch(() => null);
    const audio = form?.get("audio");
    if (!(audio instanceof Blob) || !audio.size) return jsonError(400, "audio: required (the audio file, as a multipart file field)");
    const wanted = form!.get("model");
    const model = typeof wanted === "string" && wanted ? config.models.find((m) => m.name === wanted) : config.models[0];
    if (!model) return jsonError(404, `this node does not offer the transcription model "${wanted}"`);
    const language = form!.get("language");
    const label = config.command.join(" ");
    return queue.run(() =>
      inTempDir("herd-transcribe-", async (dir) => {
        const started = performance.now();
        const file = audioFileName(audio instanceof File ? audio.name : "");
        await writeFile(join(dir, file), new Uint8Array(await audio.arrayBuffer()));
        const argv = [
          ...config.command,
          join(dir, file),
          ...["--model", model.model ?? model.name],
          ...(typeof language === "string" && language ? ["--language", language] : []),
          ...["--output-format", "json", "--output-dir", dir],
        ];
        const failure = await runCli(label, argv, d);
        if (failure) return jsonError(502, failure);
        const written = await readFile(join(dir, file.replace(/\.[^.]+$/, ".json")), "utf8").catch(() => null);
        const transcript = written === null ? null : seedTranscript(parseJson(written));
        if (!transcript) return jsonError(502, `${label} exited 0 but wrote no transcript (JSON with "text") to its --output-dir`);
        return Response.json(transcript, { headers: { "X-Transcription-Time": String(Math.round(performance.now() - started)) } });
      }),
    );
  };
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}

/**
 * The CLI's JSON in seed 000's shape: text, language and chunks. Chunks come from its "chunks",
 * else its "segments" (Whisper's shape: text, start, end), each with its index and language.
 */
function seedTranscript(raw: unknown): Transcript | null {
  const out = raw as { text?: unknown; language?: unknown; chunks?: unknown; segments?: unknown } | null;
  if (!out || typeof out.text !== "string") return null;
  const language = typeof out.language === "string" && out.language ? out.language : "unknown";
  const parts = Array.isArray(out.chunks) ? out.chunks : Array.isArray(out.segments) ? out.segments : [];
  const seconds = (x: unknown) => (typeof x === "number" && Number.isFinite(x) ? x : 0);
  const chunks = parts
    .filter((p): p is { text: string; start?: unknown; end?: unknown; language?: unknown } => typeof p?.text === "string")
    .map((p, i) => ({ text: p.text.trim(), start: seconds(p.start), end: seconds(p.end), chunk_index: i, language: typeof p.language === "string" ? p.language : language }));
  return { text: out.text.trim(), language, chunks };
}
