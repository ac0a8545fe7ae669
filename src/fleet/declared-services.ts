// What a heartbeat without a credential may say of a node's services (open mode, docs/security.md): the state of
// those the config declares on the node (nodes[].mlx, .embedding, .images, .transcription), each at its declared
// port (any, where the config leaves the port to the agent: 0) with its declared models. Anyone may send such a
// heartbeat, so it never adds a service, and with it a model's traffic, that the operator did not declare; herd's
// own agent reports exactly what its entry declares.
import type { NodeEntry } from "../config/schema.ts";
import type { Heartbeat } from "./heartbeat.ts";
import { sameModel } from "./model-name.ts";
import { visionModelName } from "./vision-models.ts";

type Report = Omit<Heartbeat, "node_id">;

interface Service {
  /** The report's fields that say it, taken or left together. */
  fields: (keyof Report)[];
  port: (r: Report) => number | null | undefined;
  models: (r: Report) => string[];
  declared: (e: NodeEntry) => { port: number; models: string[] } | undefined;
  /** The name the service knows a declared model by (a vision server its own: clip is its clip-vit-b32). */
  served?: (declared: string) => string;
}

const names = (models: { name: string }[] | null | undefined) => (models ?? []).map((m) => m.name);

const SERVICES: Service[] = [
  {
    fields: ["text_embedding", "text_embedding_port", "text_embedding_status"],
    port: (r) => r.text_embedding_port,
    models: (r) => names(r.text_embedding?.models_available),
    declared: (e) => e.embedding?.text && { port: e.embedding.text.port, models: e.embedding.text.models },
  },
  {
    fields: ["vision_embedding", "vision_embedding_port", "vision_embedding_status"],
    port: (r) => r.vision_embedding_port,
    models: (r) => names(r.vision_embedding?.models_available),
    declared: (e) => e.embedding?.vision && { port: e.embedding.vision.port, models: e.embedding.vision.models },
    served: visionModelName,
  },
  {
    fields: ["image_models", "image_port"],
    port: (r) => r.image_port,
    models: (r) => names(r.image_models),
    declared: (e) => e.images && { port: e.images.port, models: names(e.images.models) },
  },
  {
    fields: ["transcription_models", "transcription_port"],
    port: (r) => r.transcription_port,
    models: (r) => names(r.transcription_models),
    declared: (e) => e.transcription && { port: e.transcription.port, models: names(e.transcription.models) },
  },
];

/** A service reported at `port` is at the one declared: the same, or any where the config leaves it to the agent (0). */
const atPort = (port: number, declared: number) => declared === 0 || port === declared;

/** Every field of a report that speaks of a service. */
export const SERVICE_FIELDS: (keyof Report)[] = ["mlx_servers", ...SERVICES.flatMap((s) => s.fields)];

/** `report` with its services held to those `entry` declares: any other, or one at another port or with other models, taken out. */
export function heldToDeclared(report: Report, entry: NodeEntry | undefined): Report {
  const held: Record<string, unknown> = { ...report };
  if (report.mlx_servers) held.mlx_servers = report.mlx_servers.filter((s) => entry?.mlx.some((m) => m.model === s.model && atPort(s.port, m.port)));
  for (const service of SERVICES) {
    const declared = entry && service.declared(entry);
    const port = service.port(report);
    const models = service.models(report);
    // A running service says its port; one that is not running says none (null) and no models.
    const declaredPort = port === null || port === undefined ? models.length === 0 : declared !== undefined && atPort(port, declared.port);
    const allowed = declared?.models.flatMap((d) => [d, service.served?.(d) ?? d]) ?? [];
    if (!declared || !declaredPort || !models.every((m) => allowed.some((d) => sameModel(m, d)))) for (const field of service.fields) delete held[field];
  }
  return held as Report;
}
