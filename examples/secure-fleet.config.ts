// A fleet that trusts nobody by default: nodes enroll with a credential, clients need a key,
// changes need the admin token, and no secret is in this file (it lives in git): each comes
// from the environment of the process that loads it, or from a file beside it.
//
//   export HERD_NODE_TOKEN=… HERD_ADMIN_TOKEN=… HERD_KEY_OPENWEBUI=… HERD_KEY_AGENTS=… HERD_PRIMARY_TOKEN=…
//   herd serve --config examples/secure-fleet.config.ts          # on the router
//   herd node --router http://studio.local:11435 --node-id mini   # on each other Mac (HERD_NODE_TOKEN set)
import type { HerdConfig } from "../src/config/types.ts";

export default {
  server: { host: "0.0.0.0", port: 11435, dataDir: "~/.herd", shutdownGraceMs: 15000 },
  auth: {
    nodeToken: { env: "HERD_NODE_TOKEN" },
    adminToken: { env: "HERD_ADMIN_TOKEN" },
    clients: [
      // Open WebUI for the household: any model, a fair share of the fleet.
      { name: "openwebui", key: { env: "HERD_KEY_OPENWEBUI" }, rateLimit: { requestsPerMinute: 120 }, maxInFlight: 4 },
      // The coding agents: only the coding models.
      { name: "agents", key: { env: "HERD_KEY_AGENTS" }, models: ["qwen3-coder:*", "mlx:*", "claude-*"] },
    ],
  },
  nodes: [
    {
      id: "studio",
      ollama: "http://127.0.0.1:11434",
      mlx: [{ model: "mlx-community/Qwen3-Coder-30B-A3B-Instruct-4bit", port: 11441 }],
      // The router runs on the studio, so its image and transcription services stay on loopback.
      images: { models: [{ name: "z-image-turbo", command: ["mflux-generate-z-image-turbo"], steps: 4, quantize: 8 }] },
      transcription: { models: [{ name: "qwen3-asr" }] },
      embedding: { text: {} },
    },
    { id: "mini", ollama: "http://10.0.0.3:11434" },
  ],
  modelMap: { "claude-*": "qwen3-coder:30b" },
  features: { imageGeneration: true, transcription: true },
  agents: {
    profiles: {
      claude: { command: "claude", env: ["PATH", "HOME", "LANG"], capacity: 3, clientKey: "agents" },
    },
    credentials: { primary: { env: "HERD_PRIMARY_TOKEN" } },
  },
} satisfies HerdConfig;
