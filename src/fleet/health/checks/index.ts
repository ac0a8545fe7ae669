// Every health check, in the order the dashboard lists checks of equal severity.
import type { HealthCheck } from "../types.ts";
import { configDrift } from "./config-drift.ts";
import { configReloadError } from "./config-reload-error.ts";
import { contextWaste } from "./context-waste.ts";
import { diskSpaceLow } from "./disk-space.ts";
import { embedErrorRate } from "./embed-error-rate.ts";
import { textEmbeddingBackendMissing, visionBackendMissing } from "./embedding-backend-missing.ts";
import { errorRate } from "./error-rate.ts";
import { memoryPressure } from "./memory-pressure.ts";
import { mlxServerUnhealthy } from "./mlx-server-unhealthy.ts";
import { modelThrashing } from "./model-thrashing.ts";
import { nodesOffline } from "./nodes-offline.ts";
import { otlpExport } from "./otlp-export.ts";
import { ollamaUnreachable } from "./ollama-unreachable.ts";
import { nomicLoadedInOllama } from "./nomic-loaded-in-ollama.ts";
import { priorityModels } from "./priority-models.ts";
import { requestTimeouts } from "./request-timeouts.ts";
import { retryRate } from "./retry-rate.ts";
import { storeWritable } from "./store-writable.ts";
import { textEmbeddingOllamaBypass } from "./text-embedding-ollama-bypass.ts";
import { thermal } from "./thermal.ts";
import { zombieRequests } from "./zombie-requests.ts";

export const CHECKS: readonly HealthCheck[] = [
  nodesOffline,
  ollamaUnreachable,
  memoryPressure,
  thermal,
  diskSpaceLow,
  errorRate,
  requestTimeouts,
  retryRate,
  zombieRequests,
  modelThrashing,
  contextWaste,
  priorityModels,
  mlxServerUnhealthy,
  configReloadError,
  configDrift,
  storeWritable,
  otlpExport,
  embedErrorRate,
  visionBackendMissing,
  textEmbeddingBackendMissing,
  textEmbeddingOllamaBypass,
  nomicLoadedInOllama,
];
