// `herd init`: a starter config plus what an editor needs to check it, for a
// user who has nothing but the herd binary.
import { existsSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { configJsonSchema } from "../config/json-schema.ts";
import { typesSource } from "../config/types-source.ts";
import { UserError } from "../errors.ts";

const STARTER = `// herd's fleet, as code. Deploy this same file to every Mac; \`herd\` reloads it on save.
// Types: ./herd.d.ts (written by \`herd init\`). Check it: \`herd check-config herd.config.ts\`.
import type { HerdConfig } from "./herd";

export default {
  // host: "127.0.0.1" (this Mac only) by default; "0.0.0.0" lets the other Macs reach this router, and anyone on the
  // network use it until auth is set (docs/security.md).
  server: { port: 11435, dataDir: "~/.herd" },
  nodes: [
    // This Mac: plain \`herd\` reports it with its own agent; \`herd serve\` polls this Ollama instead.
    // Add one entry per Mac; each other Mac's Ollama must listen on the network (OLLAMA_HOST=0.0.0.0).
    { id: "this-mac", ollama: "http://127.0.0.1:11434" },
    // { id: "studio", ollama: "http://10.0.0.2:11434",
    //   mlx: [{ model: "mlx-community/Qwen3-Coder-30B-A3B-Instruct-4bit", port: 11440 }] },
  ],
  pins: {},
  modelMap: {
    // "claude-sonnet-*": "qwen3-coder:30b",
  },
} satisfies HerdConfig;
`;

/** Writes the starter config (never over an existing one unless `force`) and refreshes the generated type files. */
export function init(dir: string, force: boolean): string[] {
  const target = resolve(dir);
  const config = join(target, "herd.config.ts");
  if (existsSync(config) && !force) throw new UserError(`${config} already exists; pass --force to overwrite it`);
  const files: [string, string][] = [
    [config, STARTER],
    [join(target, "herd.d.ts"), typesSource],
    [join(target, "herd.schema.json"), `${JSON.stringify(configJsonSchema(), null, 2)}\n`],
  ];
  for (const [path, text] of files) writeFileSync(path, text);
  return files.map(([path]) => path);
}
