// The node's transcription service: POST /transcribe (multipart: audio, model, language) runs the
// Qwen3-ASR CLI once, as `COMMAND AUDIO --model M --output-format json --output-dir DIR`, reads
// the DIR/AUDIO-STEM.json it writes, and answers in seed 000's shape (X-Transcription-Time: ms).
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { transcriptIn } from "../backends/transcript.ts";
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
        const written = await readFile(join(dir, file.replace(/\.[^.]+$/, ".json"))).catch(() => null);
        const transcript = written === null ? null : transcriptIn(written);
        if (!transcript) return jsonError(502, `${label} exited 0 but wrote no transcript (JSON with "text") to its --output-dir`);
        return Response.json(transcript, { headers: { "X-Transcription-Time": String(Math.round(performance.now() - started)) } });
      }),
    );
  };
}
