// The simulated machine under a sim node: what a node agent would read from a
// Mac beyond Ollama (memory pressure, thermal state, free disk, embedding
// backends). Set with POST /_sim {"machine": {…}} and reported by the sim
// collector (collector.ts), so tests and demos can put a node in any state the
// health checks look for.

import { THERMAL_STATES as MACOS_THERMAL_STATES } from "../fleet/heartbeat.ts";

export const PRESSURES = ["nominal", "warning", "critical"] as const;
/** macOS's states, and "unknown": a machine whose agent cannot read one. */
export const THERMAL_STATES = [...MACOS_THERMAL_STATES, "unknown"] as const;

export interface SimEmbeddingBackend {
  /** The runtime is installed (onnxruntime for vision, fastembed for text). */
  backendAvailable: boolean;
  /** Models with weights on disk. */
  cachedModels: number;
}

export interface SimMachine {
  /** Wins over the pressure computed from the models in memory. */
  pressure?: (typeof PRESSURES)[number];
  /** macOS's thermal state, or "unknown"; default "nominal". */
  thermal?: (typeof THERMAL_STATES)[number];
  /** Free disk of the node's 1000 GB; default 500. */
  diskAvailableGb?: number;
  /** Vision embedding runtime and cached weights; unset: the node has none. */
  visionEmbedding?: SimEmbeddingBackend;
  /** The native text embedding server (port 11439) and its runtime; unset: the node has none. */
  textEmbedding?: SimEmbeddingBackend & { running: boolean };
}

export const SIM_DISK_GB = 1000;

// Validates a machine arriving as untrusted JSON; throws with a message naming the field.
export function parseMachine(value: unknown): SimMachine {
  const body = object(value, "machine");
  const machine: SimMachine = {};
  for (const [key, v] of Object.entries(body)) {
    if (key === "pressure") machine.pressure = oneOf(v, PRESSURES, "machine.pressure");
    else if (key === "thermal") machine.thermal = oneOf(v, THERMAL_STATES, "machine.thermal");
    else if (key === "diskAvailableGb") {
      if (typeof v !== "number" || v < 0 || v > SIM_DISK_GB) throw new Error(`machine.diskAvailableGb must be a number from 0 to ${SIM_DISK_GB}`);
      machine.diskAvailableGb = v;
    } else if (key === "visionEmbedding") machine.visionEmbedding = backend(v, "machine.visionEmbedding", []);
    else if (key === "textEmbedding") {
      const running = object(v, "machine.textEmbedding").running;
      if (typeof running !== "boolean") throw new Error("machine.textEmbedding.running must be a boolean");
      machine.textEmbedding = { ...backend(v, "machine.textEmbedding", ["running"]), running };
    } else throw new Error(`unknown machine key "${key}"`);
  }
  return machine;
}

function backend(value: unknown, field: string, extraKeys: string[]): SimEmbeddingBackend {
  const body = object(value, field);
  const unknown = Object.keys(body).filter((k) => !["backendAvailable", "cachedModels", ...extraKeys].includes(k));
  if (unknown.length) throw new Error(`unknown ${field} key(s): ${unknown.join(", ")}`);
  if (typeof body.backendAvailable !== "boolean") throw new Error(`${field}.backendAvailable must be a boolean`);
  const cached = body.cachedModels;
  if (typeof cached !== "number" || !Number.isInteger(cached) || cached < 0) throw new Error(`${field}.cachedModels must be a non-negative integer`);
  return { backendAvailable: body.backendAvailable, cachedModels: cached };
}

function object(value: unknown, field: string): Record<string, unknown> {
  if (typeof value !== "object" || value === null || Array.isArray(value)) throw new Error(`${field} must be an object`);
  return value as Record<string, unknown>;
}

function oneOf<T extends string>(value: unknown, allowed: readonly T[], field: string): T {
  if (!allowed.includes(value as T)) throw new Error(`${field} must be one of ${allowed.join(", ")}`);
  return value as T;
}
