import { expect, test } from "bun:test";
import { answerHeaders, fleetHeaders, type Served } from "./fleet-headers.ts";

const served: Served = { nodeId: "studio", servedModel: "qwen3:8b", backend: "ollama", fallback: false, score: 1234.4, breakdown: { wait_ms: 0, decode_ms: 12.5 }, contextOverflow: null };

test("an answer's headers are fleetHeaders' with its content type and extras, each request's own verdict on a shared identity", () => {
  const first = answerHeaders("application/x-ndjson", "qwen3", served, 0, {});
  expect(Object.fromEntries(first)).toEqual(Object.fromEntries(new Headers({ "content-type": "application/x-ndjson", ...fleetHeaders("qwen3", served, 0) })));
  expect(first.get("X-Fleet-Score-Breakdown")).toBe("wait_ms=0; decode_ms=12.5");
  // The same node, model and name again: another request's retries, score and extras are its own, and leave the first's alone.
  const second = answerHeaders("application/x-ndjson", "qwen3", { ...served, score: 7, breakdown: null, contextOverflow: { estimated: 9000, contextLength: 8192 } }, 2, { "X-Done-Reason": "stop" });
  expect([second.get("X-Fleet-Retries"), second.get("X-Fleet-Score"), second.get("X-Fleet-Score-Breakdown"), second.get("X-Done-Reason")]).toEqual(["2", "7", null, "stop"]);
  expect(second.get("X-Fleet-Context-Overflow")).toBe("estimated_tokens=9000; context_length=8192");
  expect([first.get("X-Fleet-Retries"), first.get("X-Done-Reason"), first.get("X-Fleet-Context-Overflow")]).toEqual(["0", null, null]);
});

test("past the bound on shared identities (names a client made up clear them), each answer still names its own model", () => {
  for (let i = 0; i < 1000; i++) expect(answerHeaders("application/json", `made-up-${i}`, served, 0, {}).get("X-Fleet-Requested-Model")).toBe(`made-up-${i}`);
});
