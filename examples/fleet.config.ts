// A three-Mac fleet. The same file goes to every Mac; each node agent finds its own entry.
import type { HerdConfig } from "../src/config/types.ts";

export default {
  server: { host: "0.0.0.0", port: 11435, dataDir: "~/.herd" },
  nodes: [
    {
      id: "studio",
      ollama: "http://10.0.0.2:11434",
      labels: { chip: "M3 Ultra", room: "office" },
      parallel: 8,
      mlxBindHost: "0.0.0.0",
      mlx: [
        { model: "mlx-community/Qwen3-Coder-Next-4bit", port: 11440 },
        { model: "mlx-community/Qwen3-Coder-30B-A3B-Instruct-4bit", port: 11441 },
      ],
    },
    { id: "mini", ollama: "http://10.0.0.3:11434", labels: { chip: "M4 Pro" } },
    { id: "air", ollama: "http://10.0.0.4:11434", labels: { chip: "M2" }, draining: true },
  ],
  pins: { "*": ["nomic-embed-text"], studio: ["gpt-oss:120b"] },
  modelMap: {
    "claude-opus-*": "mlx:mlx-community/Qwen3-Coder-Next-4bit",
    "claude-sonnet-*": "qwen3-coder:30b",
    "claude-haiku-*": "qwen3:8b",
  },
  scoring: { weights: { hot: 50, warm: 30, memoryFit: 20, queueDepth: -30 } },
  heartbeat: { intervalMs: 5000, timeoutMs: 15000, offlineMs: 30000 },
  routing: { maxRetries: 2, clientMaxInFlight: 8 },
  features: { autoPull: false, vramFallback: true },
} satisfies HerdConfig;
