// Speech-to-text on the fleet: which nodes offer which transcription models (the transcription
// service a node agent runs over Qwen3-ASR), and one transcription on the least busy of them.
import type { Caller } from "../auth/caller.ts";
import type { NodeRecord, Registry } from "../fleet/registry.ts";
import type { Runtime } from "../runtime.ts";
import { agentToken } from "../auth/credentials.ts";
import { asCaller, type Busy, errorOf, firstAnswer, postToNode, type Served, type ServiceCall, ServiceError, serviceNodes, tracedService, Unreachable } from "./node-service.ts";

/** Seed 000's answer to POST /api/transcribe. */
export interface Transcript {
  text: string;
  language: string;
  chunks: { text: string; start: number; end: number; chunk_index: number; language: string }[];
}

export interface TranscriptionInput {
  audio: File;
  /** null: any model, on whichever node is least busy. */
  model: string | null;
  language: string | null;
}

export interface Transcribed {
  transcript: Transcript;
  served: Served;
  /** How long the transcription took on the node, in ms. */
  transcriptionMs: number;
}

/** The transcription models a node's agent offers; none when it runs no transcription service. */
function transcriptionModelsOn(node: NodeRecord): string[] {
  return node.report.transcription_port ? (node.report.transcription_models ?? []).map((m) => m.name) : [];
}

/** Every transcription model an online node offers, once. */
export function fleetTranscriptionModels(registry: Registry): string[] {
  return [...new Set(registry.all().filter((n) => n.status === "online").flatMap(transcriptionModelsOn))].sort();
}

export interface TranscriptionMeta {
  clientIp: string | null;
  tags: string[];
  caller: Caller | null;
  signal: AbortSignal;
}

export async function transcribe(rt: Runtime, busy: Busy, input: TranscriptionInput, meta: TranscriptionMeta): Promise<Transcribed> {
  const trace = { started: performance.now(), requested: input.model ?? "any", kind: "transcription" as const, format: "ollama", clientIp: meta.clientIp, tags: meta.tags, caller: meta.caller };
  return tracedService(rt, trace, meta.signal, () => pickAndTranscribe(rt, busy, input, meta));
}

async function pickAndTranscribe(rt: Runtime, busy: Busy, input: TranscriptionInput, meta: TranscriptionMeta): Promise<Transcribed> {
  const { config } = rt.live;
  if (!config.features.transcription) throw new ServiceError(503, "transcription is disabled on this router (features.transcription); turn it on in the config");
  const offering = serviceNodes(rt.registry, busy, (n) => (input.model ? transcriptionModelsOn(n).includes(input.model) : transcriptionModelsOn(n).length > 0));
  if (!offering.length) {
    const known = fleetTranscriptionModels(rt.registry);
    const what = input.model ? `transcription model "${input.model}" is not available on any node` : "no speech-to-text models are available on any node";
    throw new ServiceError(404, `${what}; ${known.length ? `the fleet has: ${known.join(", ")}` : "declare one under nodes[].transcription in the config"}`);
  }
  // A request that names no model gets the first model of the least busy node, and only nodes with that model.
  const model = input.model ?? transcriptionModelsOn(offering[0]!)[0]!;
  const nodes = offering.filter((n) => transcriptionModelsOn(n).includes(model));
  const { value, node, retries } = await asCaller(meta.caller, model, config.modelMap, () =>
    firstAnswer(nodes, busy, (n) => onService(rt.registry, n, model, input, { timeoutMs: config.timeouts.transcriptionMs, credential: agentToken(config, n.id), signal: meta.signal })),
  );
  return { ...value, served: { nodeId: node.id, model, backend: "transcription", retries } };
}

async function onService(registry: Registry, node: NodeRecord, model: string, input: TranscriptionInput, call: ServiceCall) {
  const url = registry.serviceUrl(node, node.report.transcription_port!);
  if (!url) throw new Unreachable("no address for its transcription service");
  const form = new FormData();
  form.set("audio", input.audio, input.audio.name || "audio");
  form.set("model", model);
  if (input.language) form.set("language", input.language);
  const started = performance.now();
  const { res, bytes } = await postToNode(`${url}/transcribe`, form, { ...call, timeoutStatus: 502 });
  if (res.status === 404) throw new Unreachable(errorOf(res, bytes));
  if (!res.ok) throw new ServiceError(502, `transcription failed on ${node.id}: ${errorOf(res, bytes)}`);
  let transcript: Transcript;
  try {
    transcript = JSON.parse(new TextDecoder().decode(bytes)) as Transcript;
  } catch {
    throw new ServiceError(502, `transcription on ${node.id} answered something that is not JSON`);
  }
  return { transcript, transcriptionMs: Number(res.headers.get("x-transcription-time")) || Math.round(performance.now() - started) };
}
