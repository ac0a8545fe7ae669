// Talking to an Ollama server as a backend. For now: probing what it holds,
// used both by the node agent and by the router for agentless nodes.
import type { OllamaSection } from "../fleet/heartbeat.ts";

const GB = 1024 ** 3;

interface PsModel { name: string; size?: number; size_vram?: number; context_length?: number; expires_at?: string }
interface TagModel { name: string; size?: number; details?: { parameter_size?: string; quantization_level?: string } }

/** What an Ollama server holds right now; never throws: an unreachable server says why. */
export async function probeOllama(baseUrl: string, timeoutMs: number): Promise<OllamaSection> {
  const get = async <T>(path: string): Promise<T> => {
    const res = await fetch(new URL(path, baseUrl), { signal: AbortSignal.timeout(timeoutMs) });
    if (!res.ok) throw new Error(`HTTP ${res.status} from ${path}`);
    return (await res.json()) as T;
  };
  try {
    const [version, ps, tags] = await Promise.all([
      get<{ version?: string }>("/api/version"),
      get<{ models?: PsModel[] }>("/api/ps"),
      get<{ models?: TagModel[] }>("/api/tags"),
    ]);
    return {
      reachable: true,
      error: null,
      version: version.version ?? null,
      requests_active: 0,
      models_loaded: (ps.models ?? []).map((m) => ({
        name: m.name,
        size_gb: round((m.size_vram || m.size || 0) / GB),
        ...(m.context_length ? { context_length: m.context_length } : {}),
        ...(m.expires_at ? { expires_at: m.expires_at } : {}),
      })),
      models_available: (tags.models ?? []).map((m) => ({
        name: m.name,
        size_gb: round((m.size ?? 0) / GB),
        ...(m.details?.parameter_size ? { parameter_size: m.details.parameter_size } : {}),
        ...(m.details?.quantization_level ? { quantization: m.details.quantization_level } : {}),
      })),
    };
  } catch (e) {
    return { reachable: false, error: describeFetchError(e, timeoutMs), version: null, requests_active: 0, models_loaded: [], models_available: [] };
  }
}

/** A fetch failure in words an operator can act on. */
export function describeFetchError(e: unknown, timeoutMs: number): string {
  const err = e as Error & { code?: string };
  if (err.name === "TimeoutError" || err.name === "AbortError") return `no answer within ${timeoutMs} ms`;
  if (err.code === "ConnectionRefused" || /refused/i.test(err.message)) return "connection refused";
  return err.message;
}

function round(n: number): number {
  return Math.round(n * 10) / 10;
}
