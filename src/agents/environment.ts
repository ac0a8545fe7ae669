// A worker's environment and the member-credentials policy behind it. A worker
// gets only the variables its profile allow-lists, minus the blocked ones, plus
// what herd sets itself. Blocked: the variables herd sets (a worker cannot
// override them), those that would let it drive other panes, and those a herd
// secret is read from or whose value is a herd secret.
import { Secret } from "../config/credentials/secrets.ts";
import type { Config } from "../config/schema.ts";
import type { Role } from "./authz.ts";

type Agents = Config["agents"];
type Profile = Agents["profiles"][string];

/** Set by herd for every worker. */
const HERD_SETS = ["HERD_URL", "HERD_MCP_URL", "HERD_SESSION_ID", "HERD_TOKEN", "HERD_ROLE", "OPENAI_BASE_URL", "ANTHROPIC_BASE_URL"];
/** They name the fleet's tmux socket and pane: with them a worker's own tmux calls would reach its siblings. */
const PANE_CONTROL = ["TMUX", "TMUX_PANE"];
/**
 * A model provider's own credentials. A worker that inherits one could use the operator's
 * subscription instead of the herd: spawning with one in reach is the seed's subscription_boundary.
 */
const PROVIDER_CREDENTIALS = ["ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN", "OPENAI_API_KEY"];

export interface CredentialPolicy {
  present: boolean;
  policy: string;
  known: string[];
  allowed: string[];
  knownCount: number;
  allowedCount: number;
  blockedCount: number;
}

/** GET /member-credentials: names and counts, read fresh from the config and the environment, never a value. */
export function credentialPolicy(config: Config, env = process.env): CredentialPolicy {
  const requested = new Set(Object.values(config.agents.profiles).flatMap((p) => p.env));
  const blocked = blockedNames(config, requested, env);
  // A provider credential in reach is not passed either: a spawn of a profile that asks for it is refused (subscription_boundary).
  const refused = [...requested].filter((n) => isProviderCredential(n, env));
  const allowed = [...requested].filter((n) => !blocked.has(n) && !refused.includes(n)).sort();
  const known = [...new Set([...requested, ...blocked])].sort();
  const present = Object.keys(config.agents.profiles).length > 0;
  return { present, policy: present ? "allow-list" : "", known, allowed, knownCount: known.length, allowedCount: allowed.length, blockedCount: known.length - allowed.length };
}

function blockedNames(config: Config, requested: Set<string>, env: NodeJS.ProcessEnv): Set<string> {
  const secrets = routerSecrets(config);
  const values = new Set(secrets.flatMap((s) => (s.value ? [s.value] : [])));
  const fromEnv = secrets.flatMap((s) => (s.envName ? [s.envName] : []));
  const holdingSecret = [...requested].filter((n) => env[n] !== undefined && values.has(env[n]!));
  return new Set([...HERD_SETS, ...PANE_CONTROL, ...fromEnv, ...holdingSecret]);
}

/** Every secret of the config, wherever it is (auth, nodes, anthropic, agents). */
function routerSecrets(value: unknown): Secret[] {
  if (value instanceof Secret) return [value];
  if (Array.isArray(value)) return value.flatMap(routerSecrets);
  if (value && typeof value === "object") return Object.values(value).flatMap(routerSecrets);
  return [];
}

/** The router's variables a worker of this profile inherits: allow-listed, set, and not blocked. */
function inherited(config: Config, profile: Profile, env: NodeJS.ProcessEnv): string[] {
  const blocked = blockedNames(config, new Set(profile.env), env);
  return profile.env.filter((n) => !blocked.has(n) && env[n] !== undefined);
}

/** The provider credentials a worker of this profile would inherit, if any: a spawn refuses them. */
export function subscriptionLeaks(config: Config, profile: Profile, env = process.env): string[] {
  return inherited(config, profile, env).filter((n) => isProviderCredential(n, env));
}

const isProviderCredential = (name: string, env: NodeJS.ProcessEnv) => PROVIDER_CREDENTIALS.includes(name) && env[name] !== undefined;

export interface WorkerIdentity {
  herdUrl: string;
  sessionId: string;
  token: string;
  role: Role;
}

/** The whole environment of a worker's process. */
export function workerEnv(config: Config, profile: Profile, who: WorkerIdentity, env = process.env): Record<string, string> {
  return {
    ...Object.fromEntries(inherited(config, profile, env).map((n) => [n, env[n]!])),
    HERD_URL: who.herdUrl,
    HERD_MCP_URL: `${who.herdUrl}/mcp`,
    HERD_SESSION_ID: who.sessionId,
    HERD_TOKEN: who.token,
    HERD_ROLE: who.role,
    // The worker's own model calls go to this herd, with the herd key its profile names (if any).
    OPENAI_BASE_URL: `${who.herdUrl}/v1`,
    ANTHROPIC_BASE_URL: who.herdUrl,
    ...herdKey(config, profile),
  };
}

function herdKey(config: Config, profile: Profile): Record<string, string> {
  const key = config.auth.clients.find((c) => c.name === profile.clientKey)?.key.value;
  return key ? { OPENAI_API_KEY: key, ANTHROPIC_API_KEY: key } : {};
}
