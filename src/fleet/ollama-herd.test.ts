// An Ollama Herd agent's heartbeat, read as herd reads a heartbeat: on the one its own model wrote
// (test/fixtures/ollama-herd/SOURCES.md), and on the variations its collector and agent make.
import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import * as v from "valibot";
import { heartbeatSchema } from "./heartbeat.ts";
import { fromOllamaHerd } from "./ollama-herd.ts";

const recorded: Record<string, unknown> = JSON.parse(readFileSync(join(import.meta.dir, "../../test/fixtures/ollama-herd/heartbeat.json"), "utf8"));
const read = (body: Record<string, unknown>) => v.parse(heartbeatSchema, fromOllamaHerd(body));

describe("an Ollama Herd 0.6.1 heartbeat", () => {
  test("reads as herd's: its URL, agent, pressure, hardware, services; what herd has no words for left out", () => {
    const hb = read(recorded);
    expect(hb).toMatchObject({
      node_id: "mini",
      ollama_url: "http://192.168.1.23:11434",
      agent_version: "ollama-herd 0.6.1",
      cpu: { cores_physical: 10, utilization_pct: 12.5 },
      memory: { total_gb: 32, used_gb: 12, available_gb: 20, pressure: "nominal" },
      hardware: { memory_total_gb: 32, cores_physical: 10, chip: "Apple M4", memory_bandwidth_gbps: 120, arch: "apple_silicon" },
      image_models: [
        { name: "z-image-turbo", backend: "mflux" },
        { name: "sd3-medium", backend: "diffusionkit" },
      ],
      image_port: 11436,
      transcription_models: [{ name: "qwen3-asr" }],
      transcription_port: 11437,
      vision_embedding: { models_available: [{ name: "dinov2-vit-s14", dimensions: 384, cached: true }], processing: false },
      vision_embedding_port: 11438,
      vision_embedding_status: { backend_available: true, cached_model_count: 1 },
      mlx_servers: [{ port: 11440, model: "mlx-community/Qwen3-4B-4bit", status: "healthy" }],
    });
    // "unknown", as on every Mac: no thermal report rather than a made-up one.
    expect(hb.thermal).toBeUndefined();
    // Its MLX server's model is not an Ollama model.
    expect(hb.ollama!.models_available.map((m) => m.name)).toEqual(["llama3.2:3b"]);
  });

  test("a service whose server its agent did not start (port 0) is none; an older agent's empty vision status says nothing", () => {
    const hb = read({ ...recorded, image_port: 0, transcription: null, transcription_port: 0, vision_embedding_port: 0, vision_embedding_status: {} });
    expect(hb).toMatchObject({ image_models: null, image_port: null, transcription_models: null, transcription_port: null, vision_embedding: null, vision_embedding_port: null });
    expect(hb.vision_embedding_status).toBeUndefined();
  });

  test("its other words: warn pressure, a hot sensor's warning (Linux), no chip or bandwidth known", () => {
    const hb = read({ ...recorded, memory: { ...(recorded.memory as object), pressure: "warn" }, thermal: { state: "warning", temperature_c: 91.0, source: "psutil:coretemp" }, chip: "", memory_bandwidth_gbps: 0 });
    expect(hb.memory!.pressure).toBe("warning");
    expect(hb.thermal).toEqual({ state: "fair" });
    expect(hb.hardware).toBeUndefined();
  });

  test("a value herd does not know is refused by the schema as for any heartbeat, naming the field", () => {
    const parsed = v.safeParse(heartbeatSchema, fromOllamaHerd({ ...recorded, memory: { ...(recorded.memory as object), pressure: "dire" } }));
    expect(parsed.success).toBe(false);
    expect(parsed.issues![0].path!.map((p) => p.key)).toEqual(["memory", "pressure"]);
  });

  test("herd's own heartbeat, and the drain both agents send, are left as they came", () => {
    const own = { node_id: "studio", ollama_url: "http://10.0.0.2:11434", agent_version: "0.1.0", memory: { total_gb: 64, used_gb: 8, available_gb: 56, pressure: "nominal" } };
    expect(fromOllamaHerd(own)).toBe(own);
    const drain = { node_id: "mini", draining: true };
    expect(fromOllamaHerd(drain)).toBe(drain);
  });
});
