// A node's models as its Ollama lists them: the entries of /api/tags (on disk) and /api/ps
// (loaded), kept whole so the fleet's /api/tags and /api/ps hand clients what Ollama itself
// would (ollama-js types every field, UIs show them). They come from a node (its heartbeat, or
// the router's own poll), so they are untrusted: each field herd reads is typed and bounded, and
// an entry keeps the fields herd does not know (a newer Ollama's) only while it stays small.
import * as v from "valibot";
import { oneLine } from "../core/printable.ts";

export const GB = 1024 ** 3;
/** More than any Mac holds; a heartbeat (256 KiB) fits far fewer. */
const MAX_MODELS = 1000;
/** A real entry is about 400 bytes. */
const MAX_ENTRY_CHARS = 4096;

/**
 * A string a node sends, as herd keeps it: at most `max` characters (more is refused, naming the field), on one line
 * of printable text (core/printable.ts), as herd logs it, shows it on the dashboard and echoes it in errors.
 */
export const nodeText = (max: number) => v.pipe(v.string(), v.maxLength(max), v.transform(oneLine));
const text = nodeText;
/** Bytes, tokens: a whole number's range, so a thousand of them still add up to a finite sum. */
const amount = v.pipe(v.number(), v.minValue(0), v.maxValue(Number.MAX_SAFE_INTEGER));
/** A size in GB past any machine, as the heartbeat's GB figures are bounded. */
const MAX_MODEL_GB = 1_000_000;

const modelName = v.pipe(text(512), v.nonEmpty("a model name must not be empty"));
/** What a node's /api/version says. */
export const versionText = text(64);

const details = v.looseObject({
  parent_model: v.optional(text(512)),
  format: v.optional(text(64)),
  family: v.optional(text(128)),
  // Go marshals an empty list as null.
  families: v.optional(v.nullable(v.pipe(v.array(text(128)), v.maxLength(32)))),
  parameter_size: v.optional(text(64)),
  quantization_level: v.optional(text(64)),
});

const common = {
  name: modelName,
  model: v.optional(text(512)),
  /** Bytes, exactly as the node said. */
  size: v.optional(amount),
  digest: v.optional(text(128)),
  details: v.optional(details),
};

/** `schema`, held to MAX_ENTRY_CHARS as JSON. */
const small = <S extends v.GenericSchema>(schema: S) =>
  v.pipe(schema, v.check((entry: v.InferOutput<S>) => JSON.stringify(entry).length <= MAX_ENTRY_CHARS, `an entry longer than ${MAX_ENTRY_CHARS} characters`));

/** An /api/tags entry; a cloud model's names where it runs (remote_host, remote_model). */
export const tagEntry = small(v.looseObject({ ...common, modified_at: v.optional(text(64)), remote_host: v.optional(text(512)), remote_model: v.optional(text(512)) }));

/** An /api/ps entry, with seed 000's size_gb: what it takes in memory, in GB. */
export const psEntry = small(
  v.looseObject({ ...common, size_vram: v.optional(amount), context_length: v.optional(amount), expires_at: v.optional(text(64)), size_gb: v.optional(v.pipe(amount, v.maxValue(MAX_MODEL_GB)), 0) }),
);

/** A node's list of models, held to MAX_MODELS. */
export const modelList = <S extends v.GenericSchema>(entry: S) => v.pipe(v.array(entry), v.maxLength(MAX_MODELS));

export type TagEntry = v.InferOutput<typeof tagEntry>;

/**
 * An Ollama cloud model ("gpt-oss:120b-cloud"): a stub of a few hundred bytes on disk whose inference Ollama forwards
 * to remote_host (server/cloud_proxy.go). It is never loaded, takes no memory and cannot be pinned.
 */
export function isCloud(entry: Pick<TagEntry, "remote_host">): boolean {
  return Boolean(entry.remote_host);
}

/** A model's size on disk in GB, to a tenth (as seed 000's size_gb fields are). */
export function diskGb(entry: TagEntry): number {
  return toGb(entry.size ?? 0);
}

/** Bytes in GB, to a tenth. */
export function toGb(bytes: number): number {
  return Math.round((bytes / GB) * 10) / 10;
}
