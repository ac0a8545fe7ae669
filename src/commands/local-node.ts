// The router's own agent and a config entry for the same Ollama are one Mac:
// `herd init` declares this Mac agentless (`this-mac` at 127.0.0.1:11434) and
// plain `herd` runs an agent for it too; counted twice, its slots would double.
import type { NodeEntry } from "../config/schema.ts";

/**
 * The node id the local agent reports under: its own when the config has an entry for it, else that of
 * the entry whose Ollama is the agent's own (on this machine), else its own.
 */
export function localNodeId(nodes: NodeEntry[], nodeId: string, ollamaUrl: string): string {
  if (nodes.some((n) => n.id === nodeId)) return nodeId;
  const mine = localOllama(ollamaUrl);
  return (mine && nodes.find((n) => n.ollama && localOllama(n.ollama) === mine)?.id) || nodeId;
}

/** A loopback Ollama's port, as a string; null for any other address. */
function localOllama(url: string): string | null {
  if (!URL.canParse(url)) return null;
  const u = new URL(url);
  const loopback = u.hostname === "localhost" || u.hostname === "[::1]" || /^127\./.test(u.hostname);
  return loopback ? u.port || (u.protocol === "https:" ? "443" : "80") : null;
}
