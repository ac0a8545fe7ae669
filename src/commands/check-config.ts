// `herd check-config FILE`: what herd would make of a config, without starting anything.
import { resolve } from "node:path";
import { loadConfig } from "../config/load.ts";

/**
 * Prints a summary and returns 0; a broken config throws ConfigError, which the CLI prints line by line.
 * `readSecrets: false` (--no-secrets, for CI): each secret's reference is checked for shape, none is read.
 */
export async function checkConfig(file: string, readSecrets = true): Promise<number> {
  const { config, source } = await loadConfig(resolve(file), { secrets: readSecrets ? "strict" : "unchecked" });
  const mlx = config.nodes.reduce((n, node) => n + node.mlx.length, 0);
  console.log(`ok: ${source.path} (hash ${source.hash})`);
  console.log(`  ${config.nodes.length} node(s): ${config.nodes.map((n) => n.id).join(", ") || "none declared"}; ${mlx} MLX server(s)`);
  console.log(`  router on ${config.server.host}:${config.server.port}, data in ${config.server.dataDir}`);
  console.log(`  ${Object.keys(config.modelMap).length} model map entr(ies), pins on ${Object.keys(config.pins).length} node key(s)`);
  if (!readSecrets) console.log("  secrets not read (--no-secrets): their references are well formed");
  return 0;
}
