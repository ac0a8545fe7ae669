// Speech-to-text on the fleet: which nodes offer which transcription models (the transcription
// service a node agent runs over Qwen3-ASR), and one transcription on a node, the least busy tried
// first: herd's agent answers it at once, an Ollama Herd node's as a job (transcription-job.ts).
import { agentToken } from "../config/credentials/keys.ts";
import { type Config, nodeAnswerCap } from "../config/schema.ts";
import type { Transcribed, TranscriptionRequest } from "../core/media-request.ts";
import { NodeFailure, RouteError } from "../errors.ts";
import type { Queues } from "../fleet/queues.ts";
import { ollamaHerdAgent } from "../fleet/ollama-herd.ts";
import type { NodeRecord, Registry } from "../fleet/registry.ts";
import { callNode, errorOf, type ServiceCall, type ServiceJob, serviceNodes } from "./node-service.ts";
import { transcriptIn } from "./transcript.ts";
import { audioForm, transcribeAsJob } from "./transcription-job.ts";

/** The transcription models a node's agent offers; none when it runs no transcription service. */
function transcriptionModelsOn(node: NodeRecord): string[] {
  return node.report.transcription_port ? (node.report.transcription_models ?? []).map((m) => m.name) : [];
}

/** Every transcription model an online node offers, once. */
export function fleetTranscriptionModels(registry: Registry): string[] {
  return [...new Set(registry.all().filter((n) => n.status === "online").flatMap(transcriptionModelsOn))].sort();
}

/**
 * Where the transcription can run: the nodes that offer its model, least busy first. A request that names
 * no model gets the first model of the least busy node. A RouteError when no node offers one or transcription is off.
 */
export function transcriptionJob(registry: Registry, queues: Queues, config: Config, req: TranscriptionRequest): ServiceJob<Transcribed> {
  if (!config.features.transcription) throw new RouteError(503, "transcription is disabled on this router (features.transcription); turn it on in the config");
  const offering = serviceNodes(registry, queues, (n) => (req.model ? transcriptionModelsOn(n).includes(req.model) : transcriptionModelsOn(n).length > 0));
  if (!offering.length) {
    const known = fleetTranscriptionModels(registry);
    const what = req.model ? `transcription model "${req.model}" is not available on any node` : "no speech-to-text models are available on any node";
    throw new RouteError(404, `${what}; ${known.length ? `the fleet has: ${known.join(", ")}` : "declare one under nodes[].transcription in the config"}`);
  }
  const model = req.model ?? transcriptionModelsOn(offering[0]!)[0]!;
  return {
    model,
    nodes: offering.filter((n) => transcriptionModelsOn(n).includes(model)),
    call: async (n, signal) => {
      const url = registry.serviceUrl(n, n.report.transcription_port!);
      if (!url) throw new NodeFailure("no address for its transcription service");
      const call = { timeoutMs: config.timeouts.transcriptionMs, maxAnswer: nodeAnswerCap(config), signal };
      const value = ollamaHerdAgent(n)
        ? await transcribeAsJob(url, n.id, req, call)
        : await onService(url, n.id, model, req, { ...call, credential: agentToken(config, n.id) });
      return { value, backend: "transcription" };
    },
  };
}

/** Through herd's node agent: its service runs the CLI and answers with the transcript. */
async function onService(url: string, nodeId: string, model: string, req: TranscriptionRequest, call: ServiceCall): Promise<Transcribed> {
  const form = audioForm(req);
  form.set("model", model);
  const started = performance.now();
  const { res, bytes } = await callNode(`${url}/transcribe`, { method: "POST", body: form }, { ...call, timeoutStatus: 502 });
  if (res.status === 404) throw new NodeFailure(errorOf(res, bytes));
  if (!res.ok) throw new RouteError(502, `transcription failed on ${nodeId}: ${errorOf(res, bytes)}`);
  const transcript = transcriptIn(bytes);
  if (!transcript) throw new RouteError(502, `transcription on ${nodeId} answered no transcript (JSON with "text")`);
  return { transcript, transcriptionMs: Number(res.headers.get("x-transcription-time")) || Math.round(performance.now() - started) };
}
