// What the dispatchers (Ollama's, MLX's) are given and give back: apart from
// them, so that MLX dispatch need not import the Ollama dispatch that calls it.
import type { KeyGrant } from "../core/client-key.ts";
import type { OllamaCall } from "../backends/ollama.ts";
import type { Config } from "../config/schema.ts";
import type { SessionAffinity } from "../fleet/affinity.ts";
import type { NodeOrdering } from "../fleet/ordering.ts";
import type { PromptCounts } from "../fleet/prompt-counts.ts";
import type { Pulls } from "../fleet/pulls.ts";
import type { Queues } from "../fleet/queues.ts";
import type { Registry } from "../fleet/registry.ts";
import type { ExploreTurns } from "../fleet/explore-turns.ts";
import type { Speeds } from "../fleet/speeds.ts";
import type { Served } from "../core/fleet-headers.ts";
import type { Slot } from "../fleet/queues.ts";
import type { Adjusted } from "./body-rules.ts";
import type { ModelFacts } from "../fleet/model-facts.ts";

/** What answered, as its trace records it. */
export interface Answered extends Served {
  breakdown: NonNullable<Served["breakdown"]> | null;
  retries: number;
  excluded: string[];
  slot: Slot;
}

/** The node that answered, its first line already read; it holds its queue slot until the answer ends. */
export interface Routed extends Answered {
  call: OllamaCall;
  /** What served it: the node's Ollama, or one of its MLX servers (whose answer is parsed into the same Events). */
  backend: "ollama" | "mlx";
  /** The prompt is larger than the context it runs in on the node (Ollama cuts it). */
  contextOverflow: Adjusted["overflow"];
  thinkingBudget: Adjusted["thinkingBudget"];
  adjustments: string[];
  /** Prompt tokens session affinity takes the serving node to hold cached for this request (0: none). */
  cachedPromptTokens: number;
  /** The context the prompt ran in (the num_ctx sent, else the runner's); null when herd does not know it. */
  contextTokens: number | null;
}

export interface RouterDeps {
  registry: Registry;
  queues: Queues;
  ordering: NodeOrdering;
  pulls: Pulls;
  config: Config;
  grant: KeyGrant | null;
  /** What the finish-time strategy predicts from. */
  speeds: Pick<Speeds, "predict" | "typicalReply">;
  /** Whose turn it is to try a node not learned for the model. */
  exploreTurns: Pick<ExploreTurns, "due">;
  /** How each model's tokenizer counts herd's prompts: num_ctx is sized from it. */
  promptCounts: Pick<PromptCounts, "expected">;
  /** Which node served each session's last turn, and whether it likely still holds the prompt. */
  affinity: Pick<SessionAffinity, "holder">;
  /** Each model's trained context: herd's num_ctx never passes it, and a prompt past it is an overflow. */
  modelFacts: Pick<ModelFacts, "contextLength" | "answeredOf">;
}
