// Speech-to-text on the fleet: which nodes offer which transcription models (the transcription
// service a node agent runs over Qwen3-ASR), and one transcription on a node, the least busy tried first.
import { agentToken } from "../config/credentials/keys.ts";
import { type Config, nodeAnswerCap } from "../config/schema.ts";
import type { Transcribed, Transcript, TranscriptionRequest } from "../core/media-request.ts";
import { NodeFailure, RouteError } from "../errors.ts";
import type { Queues } from "../fleet/queues.ts";
import type { NodeRecord, Registry } from "../fleet/registry.ts";
import { errorOf, postToNode, type ServiceCall, type ServiceJob, serviceNodes } from "./node-service.ts";

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
    call: async (n, signal) => ({
      value: await onService(registry, n, model, req, { timeoutMs: config.timeouts.transcriptionMs, maxAnswer: nodeAnswerCap(config), credential: agentToken(config, n.id), signal }),
      backend: "transcription",
    }),
  };
}

async function onService(registry: Registry, node: NodeRecord, model: string, req: TranscriptionRequest, call: ServiceCall): Promise<Transcribed> {
  const url = registry.serviceUrl(node, node.report.transcription_port!);
  if (!url) throw new NodeFailure("no address for its transcription service");
  const form = new FormData();
  form.set("audio", new File([req.audio.bytes], req.audio.name, { type: req.audio.type }));
  form.set("model", model);
  if (req.language) form.set("language", req.language);
  const started = performance.now();
  const { res, bytes } = await postToNode(`${url}/transcribe`, form, { ...call, timeoutStatus: 502 });
  if (res.status === 404) throw new NodeFailure(errorOf(res, bytes));
  if (!res.ok) throw new RouteError(502, `transcription failed on ${node.id}: ${errorOf(res, bytes)}`);
  let transcript: Transcript;
  try {
    transcript = JSON.parse(new TextDecoder().decode(bytes)) as Transcript;
  } catch {
    throw new RouteError(502, `transcription on ${node.id} answered something that is not JSON`);
  }
  return { transcript, transcriptionMs: Number(res.headers.get("x-transcription-time")) || Math.round(performance.now() - started) };
}
