import { expect, test } from "bun:test";
import {
  ALPHA,
  DECODE_EFFICIENCY,
  DEFAULT_BANDWIDTH_GBPS,
  DEFAULT_LOAD_BYTES_PER_S,
  HALF_LIFE_MS,
  MAX_DECODE_TPS,
  MAX_PREFILL_TPS,
  PREFILL_PER_DECODE,
  STALE_MS,
  Speeds,
} from "./speeds.ts";

const GB = 1e9;
/** An answer of `tokens` output tokens at `tps`, `prompt` prompt tokens at `prefillTps`. */
const answer = (tps: number, tokens = 100, prompt = 0, prefillTps = 1) => ({
  completionTokens: tokens,
  evalNs: (tokens / tps) * 1e9,
  promptTokens: prompt,
  promptNs: prompt ? (prompt / prefillTps) * 1e9 : undefined,
});

test("a node:model's decode and prefill rates are learned from its answers", () => {
  const s = new Speeds();
  s.observe("studio", "qwen3:8b", answer(50, 100, 800, 400), 5 * GB);
  const p = s.predict("studio", "qwen3:8b", 5 * GB);
  expect(p.decodeTps).toBeCloseTo(50);
  expect(p.prefillTps).toBeCloseTo(400);
  expect(p.source).toBe("learned");
  expect(p.sources).toEqual({ decode: "learned", prefill: "learned", load: "prior" });
});

test("the average follows a change within a few requests", () => {
  const s = new Speeds();
  s.observe("mini", "m", answer(40));
  s.observe("mini", "m", answer(20));
  expect(s.predict("mini", "m", 0).decodeTps).toBeCloseTo(40 + ALPHA * (20 - 40));
  // Four answers at the new speed: 87% of the way there.
  for (let i = 0; i < 3; i++) s.observe("mini", "m", answer(20));
  expect(s.predict("mini", "m", 0).decodeTps).toBeLessThan(23);
});

test("samples too small to mean anything are ignored: under 4 tokens, no duration, a load_duration of a resident model", () => {
  const s = new Speeds();
  s.observe("mini", "m", answer(1000, 3));
  s.observe("mini", "m", { completionTokens: 100 });
  s.observe("mini", "m", { loadNs: 20e6 });
  expect(s.learned("mini")).toEqual([]);
  expect(s.takeChanged()).toEqual([]);
  s.observe("mini", "m", { loadNs: 3e9 });
  expect(s.predict("mini", "m", 0)).toMatchObject({ loadMs: 3000, sources: { load: "learned", decode: "prior" } });
});

test("a model the node has not run is predicted from its size and the node's factor", () => {
  const s = new Speeds();
  // 40 tok/s on a 10 GB model: 400 GB/s effective; a 20 GB model then decodes at 20 tok/s.
  s.observe("studio", "big", { ...answer(40, 100, 1000, 400), loadNs: 5e9 }, 10 * GB);
  const p = s.predict("studio", "bigger", 20 * GB);
  expect(p.decodeTps).toBeCloseTo(20);
  expect(p.prefillTps).toBeCloseTo(200);
  expect(p.loadMs).toBeCloseTo(10_000);
  expect(p.sources).toEqual({ decode: "predicted", prefill: "predicted", load: "predicted" });
  expect(s.factor("studio").decodeBytesPerS).toBeCloseTo(400 * GB);
});

test("a model of unknown size teaches its own rates but not the node's factor", () => {
  const s = new Speeds(() => 100);
  s.observe("mini", "mlx:model", answer(30));
  expect(s.predict("mini", "mlx:model", 0).source).toBe("learned");
  expect(s.predict("mini", "other", GB).source).toBe("prior");
});

test("with nothing learned, the reported or declared bandwidth is the prior", () => {
  const s = new Speeds((id) => (id === "ultra" ? 800 : null));
  const p = s.predict("ultra", "m", 8 * GB);
  expect(p.decodeTps).toBeCloseTo((800 * DECODE_EFFICIENCY) / 8);
  expect(p.prefillTps).toBeCloseTo(((800 * DECODE_EFFICIENCY) / 8) * PREFILL_PER_DECODE);
  expect(p.loadMs).toBeCloseTo((8 * GB * 1000) / DEFAULT_LOAD_BYTES_PER_S);
  expect(p.source).toBe("prior");
});

test("the share of its bandwidth a node decodes at, learned where the bandwidth is known, carries to nodes not run yet", () => {
  const bandwidth: Record<string, number> = { ultra: 800, max: 400 };
  const s = new Speeds((id) => bandwidth[id] ?? null);
  s.observe("ultra", "m", answer(40), 10 * GB); // 400 GB/s of 800: half
  expect(s.predict("max", "m", 10 * GB)).toMatchObject({ decodeTps: expect.closeTo(20), source: "prior" });
});

test("a node nothing is known of takes the rest of the fleet's factors, else the default", () => {
  const s = new Speeds();
  expect(s.predict("new", "m", 10 * GB).decodeTps).toBeCloseTo((DEFAULT_BANDWIDTH_GBPS * DECODE_EFFICIENCY) / 10);
  s.observe("a", "m", { ...answer(12, 100, 1000, 240), loadNs: 2e9 }, 10 * GB);
  s.observe("b", "m", { ...answer(4, 100, 1000, 80), loadNs: 4e9 }, 10 * GB);
  const p = s.predict("new", "m", 10 * GB);
  expect(p.decodeTps).toBeCloseTo(8);
  expect(p.prefillTps).toBeCloseTo(160);
  // Loads of 5 and 2.5 GB/s: 3.75 GB/s on average.
  expect(p.loadMs).toBeCloseTo((10 / 3.75) * 1000);
  expect(p.source).toBe("prior");
  expect(p.atBest).toBeUndefined();
});

test("a node nothing is known of is never taken faster than a Mac of the default bandwidth, however fast the fleet", () => {
  const s = new Speeds();
  s.observe("ultra", "m", answer(60, 100, 1000, 1200), 10 * GB);
  s.observe("max", "m", answer(40, 100, 1000, 800), 10 * GB);
  const p = s.predict("new", "m", 10 * GB);
  expect(p.decodeTps).toBeCloseTo((DEFAULT_BANDWIDTH_GBPS * DECODE_EFFICIENCY) / 10);
  expect(p.prefillTps).toBeCloseTo(((DEFAULT_BANDWIDTH_GBPS * DECODE_EFFICIENCY) / 10) * 20);
  // What exploring it may find: the fleet's average.
  expect(p.atBest).toEqual({ decodeTps: expect.closeTo(50), prefillTps: expect.closeTo(1000) });
  // Nothing to hope for where the prior is the fleet's, or the node's bandwidth is known.
  expect(new Speeds().predict("new", "m", 10 * GB).atBest).toBeUndefined();
  const declared = new Speeds((id) => (id === "new" ? 800 : null));
  declared.observe("ultra", "m", answer(60), 10 * GB);
  expect(declared.predict("new", "m", 10 * GB).atBest).toBeUndefined();
});

test("a node's own learned decode factor sets its prefill by the fleet's prefill/decode ratio", () => {
  const s = new Speeds();
  s.observe("a", "m", answer(20, 100, 1000, 400), 10 * GB); // ratio 20
  s.observe("b", "m", answer(10), 10 * GB);
  expect(s.predict("b", "m2", 10 * GB)).toMatchObject({ decodeTps: expect.closeTo(10), prefillTps: expect.closeTo(200), sources: { decode: "predicted", prefill: "prior" } });
});

test("model names are one: qwen3 and qwen3:latest share their rates", () => {
  const s = new Speeds();
  s.observe("a", "qwen3", answer(25));
  expect(s.predict("a", "qwen3:latest", 0)).toMatchObject({ decodeTps: expect.closeTo(25), source: "learned" });
});

test("an MLX model keeps its repo id as its name", () => {
  const s = new Speeds();
  s.observe("a", "mlx:mlx-community/Qwen3-4B-4bit", answer(60));
  expect(s.learned("a").map((r) => r.model)).toEqual(["mlx:mlx-community/Qwen3-4B-4bit"]);
});

test("what changed is handed out once, and a new Speeds over those rows knows them", () => {
  const s = new Speeds();
  s.observe("a", "m", answer(25), 4 * GB, 1000);
  const rows = s.takeChanged();
  expect(rows).toEqual([{ nodeId: "a", model: "m:latest", sizeBytes: 4 * GB, decodeTps: expect.closeTo(25), decodeSamples: 1, prefillTps: null, prefillSamples: 0, loadMs: null, loadSamples: 0, updatedAt: 1000 }]);
  expect(s.takeChanged()).toEqual([]);
  const again = new Speeds(() => null, rows);
  expect(again.predict("a", "m", 0)).toMatchObject({ decodeTps: expect.closeTo(25), source: "learned" });
  expect(again.learned("a")).toHaveLength(1);
});

test("a model's usual reply length is learned from its answers on any node, for the finish time's decode", () => {
  const s = new Speeds();
  expect(s.typicalReply("qwen3:8b")).toBeNull();
  s.observe("a", "qwen3:8b", answer(50, 100));
  s.observe("b", "qwen3:8b", answer(50, 300));
  expect(s.typicalReply("qwen3:8b")).toBeCloseTo(100 + ALPHA * 200);
  expect(s.typicalReply("llama3.2:3b")).toBeNull();
});

test("a decode rate learned lately is fresh; one not confirmed for STALE_MS is to be explored again, as is one never learned", () => {
  const s = new Speeds();
  s.observe("a", "qwen3:8b", answer(50), 5 * GB, 1_000_000);
  expect(s.predict("a", "qwen3:8b", 5 * GB, 1_000_000 + STALE_MS - 1).fresh).toBe(true);
  expect(s.predict("a", "qwen3:8b", 5 * GB, 1_000_000 + STALE_MS).fresh).toBe(false);
  expect(s.predict("b", "qwen3:8b", 5 * GB, 1_000_000).fresh).toBe(false);
});

test("no rate is believed past what any Mac does: a claimed nanosecond for 1000 tokens is MAX_DECODE_TPS", () => {
  const s = new Speeds();
  s.observe("liar", "m", { completionTokens: 1000, evalNs: 1, promptTokens: 1000, promptNs: 1 });
  expect(s.predict("liar", "m", 0)).toMatchObject({ decodeTps: MAX_DECODE_TPS, prefillTps: MAX_PREFILL_TPS });
  // Nor is a reply longer than that rate makes in the time it took the model's usual reply.
  s.observe("liar", "m", { completionTokens: 1e9, evalNs: 1e9 });
  expect(s.typicalReply("m")).toBeLessThanOrEqual(MAX_DECODE_TPS);
});

test("an average's weight halves with each hour since its last sample: after a quiet day, the next answer is the figure", () => {
  const s = new Speeds();
  s.observe("mini", "m", answer(40), 0, 0);
  s.observe("mini", "m", answer(20), 0, HALF_LIFE_MS);
  expect(s.predict("mini", "m", 0).decodeTps).toBeCloseTo(40 * (1 - ALPHA) * 0.5 + 20 * (1 - (1 - ALPHA) * 0.5));
  s.observe("mini", "m", answer(10), 0, HALF_LIFE_MS + 86_400_000);
  expect(s.predict("mini", "m", 0).decodeTps).toBeCloseTo(10);
});

test("what the store kept is bounded when read back, and the first answer since replaces each stored figure", () => {
  const row = { nodeId: "a", model: "m:latest", sizeBytes: 4 * GB, decodeTps: 50, decodeSamples: 9, prefillTps: 500, prefillSamples: 9, loadMs: 2000, loadSamples: 2, updatedAt: 1000 };
  const lie = { ...row, nodeId: "liar", decodeTps: 2e10, prefillTps: -1, loadMs: 1e-9, sizeBytes: Number.NaN, decodeSamples: 1.5, updatedAt: 9e15 };
  const s = new Speeds(() => null, [row, lie, { ...row, nodeId: "" }, { ...row, model: 7 as unknown as string }], 5000);
  expect(s.learned("a")).toEqual([row]);
  expect(s.learned("liar")).toEqual([{ ...lie, sizeBytes: 0, decodeTps: null, decodeSamples: 0, prefillTps: null, prefillSamples: 0, loadMs: null, loadSamples: 0, updatedAt: 5000 }]);
  expect(s.learned("")).toEqual([]);
  s.observe("a", "m", answer(20), 4 * GB, 6000);
  expect(s.predict("a", "m", 0)).toMatchObject({ decodeTps: 20, prefillTps: 500 });
  s.observe("a", "m", answer(40), 4 * GB, 6000);
  expect(s.predict("a", "m", 0).decodeTps).toBeCloseTo(20 + ALPHA * 20);
});
