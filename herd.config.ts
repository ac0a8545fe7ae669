// The fleet `npm start` runs. One file for the whole fleet: deploy it to every Mac,
// keep it in git; herd reloads it on save. Types: src/config/types.ts.
import type { HerdConfig } from "./src/config/types.ts";

export default {
  // This machine only; "0.0.0.0" lets the other Macs' agents and clients reach it (and everyone on the LAN: set auth).
  server: { host: "127.0.0.1", port: 11435, dataDir: "~/.herd" },

  // `npm start` also runs a node agent for this machine (its id is the host name),
  // so a single Mac needs no entry here. Add one entry per other Mac:
  nodes: [
    // { id: "studio", ollama: "http://10.0.0.2:11434", labels: { room: "office" },
    //   mlx: [{ model: "mlx-community/Qwen3-Coder-30B-A3B-Instruct-4bit", port: 11440 }] },
    // { id: "mini", ollama: "http://10.0.0.3:11434" },
  ],

  // Keep these resident: node id → models ("*" = every node).
  pins: {},

  // Aliases, first match wins.
  modelMap: {
    // "claude-sonnet-*": "qwen3-coder:30b",
  },

  heartbeat: { intervalMs: 5000, timeoutMs: 15000, offlineMs: 30000 },
} satisfies HerdConfig;
