// A pinned model is one the operator wants hot at all times; loaded nowhere,
// its first request pays a cold load (or fails). A load under way is no problem
// yet (a big model takes up to a minute on a Mac); one that failed is, with its error.
import { sameModel } from "../../model-name.ts";
import { preloadCycleMs } from "../../preloader.ts";
import { cloudOn, loadedOn, onDisk } from "../../registry.ts";
import { duration, fold, type HealthCheck, type HealthInput, type Problem } from "../types.ts";

type Pin = HealthInput["pins"][number];

export const priorityModels: HealthCheck = {
  id: "priority_models",
  name: "Pinned models",
  run(input) {
    const { nodes, pins, loads } = input;
    const loading = (p: Pin) => loads.some((l) => l.state === "loading" && l.node_id === p.node_id && sameModel(l.model, p.model));
    // Ollama lists a model in /api/ps while its runner still loads (server/routes.go PsHandler): not loaded yet.
    const loaded = (p: Pin) => nodes.some((n) => n.status === "online" && loadedOn(n, p.model) && !(n.id === p.node_id && loading(p)));
    const problems = pins.filter((p) => !loaded(p)).map((p) => ({ node: p.node_id, details: { model: p.model }, ...why(input, p) }));
    return fold(problems, pins.length ? `all ${pins.length} pin(s) loaded` : "no pinned models");
  },
};

function why({ nodes, pins, loads, config, now }: HealthInput, { node_id, model }: Pin): Pick<Problem, "severity" | "finding" | "recommendation"> {
  const node = nodes.find((n) => n.id === node_id);
  const unloaded = (recommendation: string) => ({ severity: "warning" as const, finding: `pinned ${model} (on ${node_id}) is not loaded anywhere`, recommendation });
  if (!node || node.status !== "online") return unloaded(`bring ${node_id} online; the preloader then loads ${model}.`);
  if (!onDisk(node, model)) return unloaded(`pull ${model} onto ${node_id} (the preloader does not pull), or unpin it.`);
  if (cloudOn(node, model)) return unloaded(`${model} is an Ollama cloud model: it runs at ollama.com, there is nothing to load; unpin it.`);
  const { enabled, maxCount } = config.preloader;
  if (!enabled) return unloaded(`the preloader is off (preloader.enabled: false): turn it on, or unpin ${model}.`);
  if (pins.filter((p) => p.node_id === node_id).findIndex((p) => sameModel(p.model, model)) >= maxCount) {
    return unloaded(`${node_id} has more pins than the preloader keeps loaded (preloader.maxCount: ${maxCount}): raise it, or unpin one.`);
  }
  const tries = loads.filter((l) => l.node_id === node_id && sameModel(l.model, model));
  // A load under way says more than an earlier one's failure.
  const load = tries.find((l) => l.state === "loading") ?? tries[0];
  if (load?.state === "loading") {
    return { severity: "info", finding: `pinned ${model} is loading on ${node_id} (for ${duration(now - load.since)})`, recommendation: "nothing to do: it shows as loaded once its load is done (a big model takes up to a minute on a Mac)." };
  }
  if (load?.state === "failed") {
    return {
      severity: "warning",
      finding: `pinned ${model} did not load on ${node_id} (${duration(now - load.at)} ago): ${load.error}`,
      recommendation: `make room on ${node_id} if it is memory (unpin or unload another model there, or pin a smaller one); the router's log has the failure, and the preloader tries again every ${duration(preloadCycleMs(config))}.`,
    };
  }
  return { severity: "info", finding: `pinned ${model} (on ${node_id}) is not loaded yet`, recommendation: `nothing to do: the preloader loads pins every ${duration(preloadCycleMs(config))}.` };
}
