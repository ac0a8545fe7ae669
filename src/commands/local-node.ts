// The local agent and a config entry for the same Ollama are one Mac: `herd init` declares this Mac agentless
// (`this-mac` at 127.0.0.1:11434), a fleet's config in git names it by its LAN address or host name (`studio` at
// 10.0.0.2, `http://studio.local:11434`), and plain `herd` runs an agent for it too; counted twice, its models would be
// listed twice and its slots doubled. The agent takes such an entry's id, whatever address names this machine there.
import { lookup } from "node:dns/promises";
import { isIP } from "node:net";
import { hostname, networkInterfaces } from "node:os";
import type { NodeEntry } from "../config/schema.ts";
import { isLoopback } from "../core/loopback.ts";
import { within } from "../within.ts";

/** How long a host name of the config may take to resolve: a name that does not answer is not this machine. */
const RESOLVE_MS = 1000;

/** What names this machine: the addresses of its interfaces (loopback among them) and its host names, lower case. */
export interface ThisMachine {
  addresses: ReadonlySet<string>;
  names: ReadonlySet<string>;
  /** A host name's addresses (the system resolver: /etc/hosts, mDNS's .local, DNS); [] when it does not resolve. */
  resolve(name: string): Promise<string[]>;
}

export function thisMachine(): ThisMachine {
  const addresses = new Set(["127.0.0.1", "::1"]);
  for (const list of Object.values(networkInterfaces())) for (const a of list ?? []) addresses.add(a.address.toLowerCase());
  const host = hostname().toLowerCase();
  const short = host.split(".")[0]!;
  return {
    addresses,
    names: new Set(["localhost", host, short, `${short}.local`]),
    resolve: async (name) => (await lookup(name, { all: true })).map((a) => a.address.toLowerCase()),
  };
}

/**
 * The node id the local agent reports under: its own when the config has an entry for it, else that of the entry
 * whose Ollama is the agent's own (this machine, the same port), else its own.
 */
export async function localNodeId(nodes: NodeEntry[], nodeId: string, ollamaUrl: string, machine: ThisMachine = thisMachine()): Promise<string> {
  if (nodes.some((n) => n.id === nodeId)) return nodeId;
  const port = portOf(ollamaUrl);
  if (port === null) return nodeId;
  for (const n of nodes) if (n.ollama && portOf(n.ollama) === port && (await isThisMachine(hostOf(n.ollama), machine))) return n.id;
  return nodeId;
}

async function isThisMachine(host: string, machine: ThisMachine): Promise<boolean> {
  if (isLoopback(host) || machine.addresses.has(host) || machine.names.has(host)) return true;
  // An address that is not one of ours is another machine; a name may still resolve to one of ours.
  if (isIP(host)) return false;
  const addresses = await within(machine.resolve(host).catch((): string[] => []), RESOLVE_MS, (): string[] => []);
  return addresses.some((a) => isLoopback(a) || machine.addresses.has(a));
}

/** The URL's host, lower case and without IPv6 brackets. */
function hostOf(url: string): string {
  return new URL(url).hostname.toLowerCase().replace(/^\[|\]$/g, "");
}

function portOf(url: string): string | null {
  if (!URL.canParse(url)) return null;
  const u = new URL(url);
  return u.port || (u.protocol === "https:" ? "443" : "80");
}
