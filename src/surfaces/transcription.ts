// Speech-to-text, fleet-wide: POST /api/transcribe (multipart: the file in "audio"; optional
// "model" and "language") answers seed 000's JSON with chunks and X-Transcription-Time. Seed
// 000's statuses: 400 no audio, 404 no STT model on any node, 502 failed, 503 disabled.
import { Elysia } from "elysia";
import { callerOf, clientAddressOf } from "../auth/guard.ts";
import { readingBody } from "../auth/limits.ts";
import { routeFacts } from "../auth/route-facts.ts";
import type { TranscriptionRequest } from "../core/media-request.ts";
import type { Pipeline } from "../pipeline/route.ts";
import { transcribe } from "../pipeline/media.ts";
import { takeHerdFields } from "./herd-fields.ts";
import { bodyNamesProblem } from "../core/client-names.ts";
import { jsonError } from "../core/wire-errors.ts";
import { fleetHeaders } from "../core/fleet-headers.ts";

type Ctx = { request: Request };

export function transcriptionSurface(rt: Pipeline) {
  return new Elysia({ name: "transcription" }).use(routeFacts).post(
    "/api/transcribe",
    ({ request }: Ctx) => transcribeRequest(rt, request, clientAddressOf(request)),
    // media: the audio is an upload, held to server.maxMediaBodyMb rather than the JSON limit.
    { parse: "none", facts: { access: "client", body: "media", errors: "ollama" } },
  );
}

async function transcribeRequest(rt: Pipeline, request: Request, clientIp: string | null): Promise<Response> {
  // Refused before routing, with the X-Fleet-* set all the same: the model it asked for once the form is read.
  let requested = "none";
  const refused = (message: string) => jsonError(400, message, fleetHeaders(requested, null, 0));
  if (!request.headers.get("content-type")?.startsWith("multipart/form-data")) {
    return refused('send multipart/form-data with the audio file in the field "audio" (curl -F "audio=@recording.wav")');
  }
  const form = await readingBody(request, () => request.formData().catch(() => null));
  if (!form) return refused("invalid multipart/form-data body");
  const text: Record<"model" | "language", string | null> = { model: null, language: null };
  for (const name of ["model", "language"] as const) {
    const value = form.get(name);
    if (value !== null && typeof value !== "string") return refused(`${name}: expected text, got a file`);
    text[name] = value?.trim() || null;
  }
  const tooLong = bodyNamesProblem(text);
  if (tooLong) return refused(tooLong);
  requested = text.model ?? requested;
  const audio = form.get("audio");
  if (!(audio instanceof File)) return refused('audio: required (the audio file, as a file field: -F "audio=@recording.wav")');
  if (!audio.size) return refused("audio: the file is empty");
  const herd = takeHerdFields({}, request.headers);
  if (typeof herd === "string") return refused(herd);
  const meta = { tags: herd.tags, clientIp, caller: callerOf(request) };
  const req: TranscriptionRequest = {
    surface: "ollama",
    kind: "transcription",
    ...text,
    audio: { bytes: new Uint8Array(await audio.arrayBuffer()), name: audio.name || "audio", type: audio.type },
    signal: request.signal,
  };
  return transcribe(rt, req, meta, {
    answer: (done, headers, served) =>
      Response.json(done.transcript, { headers: { ...headers, "X-Fleet-Model": served.servedModel, "X-Transcription-Time": String(done.transcriptionMs) } }),
    error: jsonError,
  });
}
