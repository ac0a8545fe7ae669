// Which models each node should hold: a pure function of a fleet snapshot (each
// node's RAM and what is on its disk) and the last 24 h of requests. No I/O, so
// it is tested on hand-built fleets. How it decides: docs/recommendations.md.
import { MLX_PREFIX } from "./catalog.ts";
import { CATEGORIES, type CatalogModel, catalogModel, describeModel, MODEL_CATALOG, type ModelCategory, qualityScore } from "./model-catalog.ts";
import { normalizeModelName, sameModel } from "./model-name.ts";
import { OS_RESERVE_GB } from "./scorer.ts";

/** No single model may take more than this share of a node's usable RAM: room for variety. */
const MODEL_RAM_CAP = 0.5;
/** A model this large is recommended on one node only, unless another node is already serving with it. */
export const BIG_MODEL_GB = 20;
/** Quality points a model already on the node's disk is worth over one that must be pulled. */
const ON_DISK_BONUS = 3;
/** Coverage picks grow together through these RAM tiers, so one category cannot starve the others. */
const TIERS_GB = [4, 8, 16, 32, 64, 128, Infinity];
/** Unknown models need about this much more RAM than their size on disk (KV cache, compute graph). */
const RUN_OVERHEAD = 1.2;

export interface SnapshotNode {
  node_id: string;
  /** Physical memory; null when the node does not report it (agentless nodes). */
  total_ram_gb: number | null;
  /** Models on the node's disk. */
  models: { name: string; size_gb: number }[];
}

export interface FleetSnapshot {
  nodes: SnapshotNode[];
  /** Requests per model over the last 24 h (any spelling of a name; merged here). */
  requests_24h: { model: string; requests: number }[];
  /** Unix seconds. */
  now: number;
  catalog?: readonly CatalogModel[];
}

export type Priority = "high" | "medium" | "low";

export interface Recommendation {
  model: string;
  display_name: string;
  category: ModelCategory;
  ram_gb: number;
  quality_score: number | null;
  reason: string;
  priority: Priority;
  already_available: boolean;
}

export interface NodeRecommendations {
  node_id: string;
  total_ram_gb: number | null;
  usable_ram_gb: number | null;
  current_models: string[];
  recommendations: Recommendation[];
  total_recommended_ram_gb: number;
  ram_headroom_gb: number | null;
  /** Why a node has no recommendations, when that is not obvious. */
  note?: string;
}

export function recommend(snapshot: FleetSnapshot) {
  const catalog = snapshot.catalog ?? MODEL_CATALOG;
  const demand = mergeDemand(snapshot.requests_24h);
  const categoryOf = (model: string) => (catalogModel(model, catalog)?.category ?? describeModel(model).category);
  const categoryDemand = new Map<ModelCategory, number>();
  for (const [model, n] of demand) categoryDemand.set(categoryOf(model), (categoryDemand.get(categoryOf(model)) ?? 0) + n);
  // The busiest categories first; then the rest in the catalog's order.
  const categoryOrder = [...CATEGORIES].sort((a, b) => (categoryDemand.get(b) ?? 0) - (categoryDemand.get(a) ?? 0));
  const topOfCategory = new Map<ModelCategory, string>();
  for (const [model] of demand) if (!topOfCategory.has(categoryOf(model))) topOfCategory.set(categoryOf(model), model);

  // Big models go where they fit best: the largest nodes choose first.
  const bigPicks = new Map<string, string>();
  const byRam = [...snapshot.nodes].sort((a, b) => (b.total_ram_gb ?? -1) - (a.total_ram_gb ?? -1) || a.node_id.localeCompare(b.node_id));
  const answers = new Map<string, NodeRecommendations>();
  for (const node of byRam) {
    const plan = new NodePlan(node, catalog, bigPicks);
    plan.keepInUse(demand, categoryOf, topOfCategory);
    plan.cover(categoryOrder, categoryDemand);
    for (const r of plan.picks) if (r.ram_gb >= BIG_MODEL_GB) bigPicks.set(normalizeModelName(r.model), node.node_id);
    answers.set(node.node_id, plan.answer());
  }
  const nodes = snapshot.nodes.map((n) => answers.get(n.node_id)!);

  const covered = new Set(nodes.flatMap((n) => n.recommendations.map((r) => r.category)));
  const totalRequests = [...demand.values()].reduce((a, b) => a + b, 0);
  const recommended = nodes.flatMap((n) => n.recommendations);
  const totalRam = nodes.reduce((sum, n) => sum + (n.total_ram_gb ?? 0), 0);
  const recommendedRam = nodes.reduce((sum, n) => sum + n.total_recommended_ram_gb, 0);
  return {
    nodes,
    usage: {
      total_requests_24h: totalRequests,
      category_breakdown: Object.fromEntries(categoryOrder.filter((c) => categoryDemand.get(c)).map((c) => [c, categoryDemand.get(c)!])),
      top_models: [...demand].slice(0, 10).map(([model, requests]) => ({ model, requests, category: categoryOf(model) })),
      category_coverage: Object.fromEntries(CATEGORIES.map((c) => [c, covered.has(c)])),
    },
    fleet_summary:
      `${nodes.length} node(s), ${round(totalRam)}GB total RAM, ` +
      `${new Set(recommended.map((r) => r.model)).size} model(s) recommended using ${round(recommendedRam)}GB`,
    uncovered_categories: CATEGORIES.filter((c) => !covered.has(c)),
    generated_at: snapshot.now,
  };
}

export type RecommendationsAnswer = ReturnType<typeof recommend>;

/** One node's recommendations, built within its RAM budget. */
class NodePlan {
  readonly picks: Recommendation[] = [];
  private readonly usable: number | null;
  private readonly cap: number;

  constructor(
    private readonly node: SnapshotNode,
    private readonly catalog: readonly CatalogModel[],
    private readonly bigPicks: ReadonlyMap<string, string>,
  ) {
    this.usable = node.total_ram_gb === null ? null : round(Math.max(0, node.total_ram_gb - OS_RESERVE_GB));
    this.cap = (this.usable ?? 0) * MODEL_RAM_CAP;
  }

  private get left(): number {
    return (this.usable ?? 0) - this.picks.reduce((sum, r) => sum + r.ram_gb, 0);
  }

  private onDisk(model: string) {
    return this.node.models.find((m) => sameModel(m.name, model));
  }

  private fits(ramGb: number): boolean {
    return ramGb <= this.cap && ramGb <= this.left + 1e-9;
  }

  /** Models on this node that served requests in the last 24 h stay, busiest first. */
  keepInUse(demand: Map<string, number>, categoryOf: (m: string) => ModelCategory, topOfCategory: Map<ModelCategory, string>): void {
    for (const [model, requests] of demand) {
      const disk = this.onDisk(model);
      if (!disk) continue;
      const entry = catalogModel(model, this.catalog);
      const ram = entry?.ram_gb ?? round(disk.size_gb * RUN_OVERHEAD);
      if (!this.fits(ram)) continue;
      const category = categoryOf(model);
      const reason =
        topOfCategory.get(category) === model
          ? `Currently your most-used ${category} model (${requests} requests in 24h)`
          : `In use: ${requests} requests in 24h`;
      this.picks.push({ ...this.describe(disk.name, entry, category, ram), reason, priority: "high", already_available: true });
    }
  }

  /**
   * One model for every category the node does not cover yet. Each category starts
   * with the best model of it already on disk, else its smallest; then, tier by tier,
   * every category moves up to the best model of that tier that still fits, the
   * busiest categories first.
   */
  cover(categoryOrder: ModelCategory[], categoryDemand: Map<ModelCategory, number>): void {
    const open = categoryOrder.filter((c) => !this.picks.some((r) => r.category === c));
    const chosen = new Map<ModelCategory, CatalogModel>();
    const room = () => this.left - [...chosen.values()].reduce((sum, c) => sum + c.ram_gb, 0) + 1e-9;
    for (const category of open) {
      const candidates = this.candidates(category);
      const held = candidates.filter((c) => this.onDisk(c.model) && c.ram_gb <= room()).sort((a, b) => this.rank(b) - this.rank(a))[0];
      const smallest = candidates.sort((a, b) => a.ram_gb - b.ram_gb || this.rank(b) - this.rank(a))[0];
      const start = held ?? smallest;
      if (start && start.ram_gb <= room()) chosen.set(category, start);
    }
    for (const tier of TIERS_GB) {
      for (const category of open) {
        const current = chosen.get(category);
        if (!current) continue;
        const better = this.candidates(category)
          .filter((c) => c.ram_gb <= tier && this.rank(c) > this.rank(current) && c.ram_gb <= room() + current.ram_gb)
          .sort((a, b) => this.rank(b) - this.rank(a))[0];
        if (better) chosen.set(category, better);
      }
    }
    for (const category of open) {
      const c = chosen.get(category);
      if (!c) continue;
      const onDisk = this.onDisk(c.model) !== undefined;
      const asked = categoryDemand.get(category) ?? 0;
      const demand = asked ? `; ${asked} ${category} requests in 24h` : "";
      const reason = onDisk
        ? `Already downloaded; covers ${category}${demand}`
        : `Best ${category} model that fits this node's ${this.usable} GB beside the others${demand}`;
      this.picks.push({
        ...this.describe(c.model, c, category, c.ram_gb),
        reason,
        priority: asked ? "medium" : "low",
        already_available: onDisk,
      });
    }
  }

  private candidates(category: ModelCategory): CatalogModel[] {
    return this.catalog.filter(
      (c) => c.category === category && c.ram_gb <= this.cap && !(c.ram_gb >= BIG_MODEL_GB && this.bigPicks.has(normalizeModelName(c.model))),
    );
  }

  private rank(c: CatalogModel): number {
    return qualityScore(c) + (this.onDisk(c.model) ? ON_DISK_BONUS : 0);
  }

  private describe(model: string, entry: CatalogModel | undefined, category: ModelCategory, ram: number) {
    return {
      model: entry?.model ?? normalizeModelName(model),
      display_name: entry?.display_name ?? describeModel(model).display_name,
      category,
      ram_gb: ram,
      quality_score: entry ? qualityScore(entry) : null,
    };
  }

  answer(): NodeRecommendations {
    const order: Record<Priority, number> = { high: 0, medium: 1, low: 2 };
    const recommendations = this.picks.sort((a, b) => order[a.priority] - order[b.priority] || CATEGORIES.indexOf(a.category) - CATEGORIES.indexOf(b.category));
    const total = round(recommendations.reduce((sum, r) => sum + r.ram_gb, 0));
    return {
      node_id: this.node.node_id,
      total_ram_gb: this.node.total_ram_gb,
      usable_ram_gb: this.usable,
      current_models: this.node.models.map((m) => m.name),
      recommendations,
      total_recommended_ram_gb: total,
      ram_headroom_gb: this.usable === null ? null : round(this.usable - total),
      ...(this.usable === null ? { note: "memory not reported: run the herd node agent on this machine, or declare its hardware.memoryGb in the config, to get recommendations" } : {}),
    };
  }
}

/** Requests per model, names merged by Ollama's rule, busiest first (ties by name). */
function mergeDemand(requests: FleetSnapshot["requests_24h"]): Map<string, number> {
  const merged = new Map<string, number>();
  for (const { model, requests: n } of requests) {
    // An MLX server's model is a repo id, which has no tag to default.
    const key = model.startsWith(MLX_PREFIX) ? model : normalizeModelName(model);
    merged.set(key, (merged.get(key) ?? 0) + n);
  }
  return new Map([...merged].sort(([a, x], [b, y]) => y - x || a.localeCompare(b)));
}

function round(n: number): number {
  return Math.round(n * 10) / 10;
}
