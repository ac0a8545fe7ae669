// A transcription on an Ollama Herd node. Its agent runs mlx-qwen3-asr's own server
// (`mlx-qwen3-asr serve`, node/agent.py of ollama-herd at 32cfc92), which takes the audio as a job
// and is asked for it until it is done (mlx_qwen3_asr/server.py of moona3k/mlx-qwen3-asr at 3d77ae7):
// POST /transcribe → 202 {job_id, status: "queued"}; GET /jobs/{id} → its status, "queued" or
// "processing", then "completed" with its result or "failed" with its error. herd waits for the
// result within the request's deadline and stops asking when the client goes; the server has no
// way to cancel a job, so one already started runs to its end on the node.
import { eitherSignal } from "../abort.ts";
import type { Transcribed, TranscriptionRequest } from "../core/media-request.ts";
import { NodeFailure, RouteError } from "../errors.ts";
import { callNode, errorOf, MAX_ERROR_CHARS, type ServiceCall } from "./node-service.ts";
import { transcriptOf } from "./transcript.ts";

/** The API key Ollama Herd's agent starts the server with (MLX_ASR_API_KEY, node/agent.py) and its router sends (server/streaming.py). */
const API_KEY = "herd-internal";
/** How often the job is asked for: every 0.5 s, as Ollama Herd's router does (server/streaming.py: transcribe_on_node). */
const POLL_MS = 500;
/** The server's job ids are "j_" and 32 hex digits (server.py); herd puts nothing else into a URL. */
const JOB_ID = /^[A-Za-z0-9_-]{1,64}$/;

export async function transcribeAsJob(url: string, nodeId: string, req: TranscriptionRequest, call: ServiceCall): Promise<Transcribed> {
  const started = performance.now();
  // One deadline for the whole job: the upload, the wait in its queue, the transcription.
  const whole = AbortSignal.timeout(call.timeoutMs);
  const until = Date.now() + call.timeoutMs;
  const linked = eitherSignal(call.signal, whole);
  const signal = linked.signal;
  // Each call's own deadline falls just after the job's, which is the one that speaks.
  const ask = (path: string, init: Parameters<typeof callNode>[1]) =>
    callNode(`${url}${path}`, init, { timeoutMs: Math.max(1, until - Date.now() + 1000), maxAnswer: call.maxAnswer, credential: API_KEY, signal, timeoutStatus: 502 });
  try {
    const submitted = await ask("/transcribe", { method: "POST", body: audioForm(req) });
    // Its queue is full (503 "Server at capacity") or its key over the rate limit (429): nothing started, another node may take it.
    if (submitted.res.status === 503 || submitted.res.status === 429) throw new NodeFailure(`${nodeId}'s transcription server is busy: ${errorOf(submitted.res, submitted.bytes)}`, submitted.res.status);
    if (!submitted.res.ok) throw new RouteError(502, `transcription failed on ${nodeId}: its server refused the job: ${errorOf(submitted.res, submitted.bytes)}`);
    const id = jobIdOf(submitted.bytes);
    if (!id) throw new RouteError(502, `transcription on ${nodeId}: its server answered the upload without a job id`);
    for (;;) {
      await pause(POLL_MS, signal);
      if (signal.aborted) throw signal.reason;
      const { res, bytes } = await ask(`/jobs/${id}`, { method: "GET" }).catch((e) => {
        if (e instanceof NodeFailure) throw new RouteError(502, `transcription on ${nodeId}: lost its server while job ${id} ran (${e.message})`);
        throw e;
      });
      // 404: the job is gone (the server restarted, or it expired).
      if (!res.ok) throw new RouteError(502, `transcription on ${nodeId}: asking for job ${id} failed: ${errorOf(res, bytes)}`);
      const job = jsonOf(bytes) as { status?: unknown; result?: unknown; error?: unknown } | null;
      if (job?.status === "queued" || job?.status === "processing") continue;
      if (job?.status === "failed") throw new RouteError(502, `transcription failed on ${nodeId}: ${typeof job.error === "string" && job.error ? job.error.slice(0, MAX_ERROR_CHARS) : "its job failed and said no more"}`);
      const transcript = job?.status === "completed" ? transcriptOf(job.result) : null;
      if (!transcript) throw new RouteError(502, `transcription on ${nodeId}: job ${id} answered neither a status it has nor a transcript`);
      return { transcript, transcriptionMs: Math.round(performance.now() - started) };
    }
  } catch (e) {
    if (whole.aborted && !call.signal.aborted) {
      throw new RouteError(502, `transcription on ${nodeId} timed out: no transcript within ${call.timeoutMs} ms (timeouts.transcriptionMs); a job it took runs there to its end`);
    }
    throw e;
  } finally {
    linked.release();
  }
}

/** The upload both kinds of node take: the file in "audio", and "language" when the client gave one. */
export function audioForm(req: TranscriptionRequest): FormData {
  const form = new FormData();
  form.set("audio", new File([req.audio.bytes], req.audio.name, { type: req.audio.type }));
  if (req.language) form.set("language", req.language);
  return form;
}

/** Waits `ms`, or less when `signal` aborts first. */
function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener("abort", done, { once: true });
  });
}

function jobIdOf(bytes: Uint8Array): string | null {
  const id = (jsonOf(bytes) as { job_id?: unknown } | null)?.job_id;
  return typeof id === "string" && JOB_ID.test(id) ? id : null;
}

function jsonOf(bytes: Uint8Array): unknown {
  try {
    return JSON.parse(new TextDecoder().decode(bytes));
  } catch {
    return null;
  }
}
