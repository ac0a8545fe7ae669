import { expect, test } from "bun:test";
import { testFleet } from "../fleet/test-fixtures.ts";
import { resolveAgentModel } from "./resolve.ts";
import { chatRequest } from "./test-fixtures.ts";

const fleet = (config: Record<string, unknown> = {}) => testFleet([{ id: "studio", loaded: { "qwen2.5-coder:7b": 5, "llama3.2:3b": 2 } }], config);

test("a request that asks for nothing keeps its model", () => {
  const { registry, config } = fleet();
  const req = chatRequest({ model: "claude-sonnet-4-5" });
  expect(resolveAgentModel(registry, config, req, null)).toBeNull();
  expect([req.model, req.requested, req.resolution]).toEqual(["claude-sonnet-4-5", undefined, undefined]);
});

test("an agent's id becomes the local model, the id kept as requested and the reason in the surface's words", () => {
  const { registry, config } = fleet();
  const anthropic = chatRequest({ model: "claude-sonnet-4-5", resolve: true });
  expect(resolveAgentModel(registry, config, anthropic, null)).toBeNull();
  expect([anthropic.model, anthropic.requested, anthropic.resolution]).toEqual(["qwen2.5-coder:7b", "claude-sonnet-4-5", `"claude-sonnet-4-5": auto-routed (coding tier) to the best loaded model`]);
  const responses = chatRequest({ surface: "responses", model: "gpt-5-codex", resolve: true });
  expect(resolveAgentModel(registry, config, responses, null)).toBeNull();
  expect(responses.resolution).toBe(`"gpt-5-codex" → qwen2.5-coder:7b: auto-routed (coding tier) to the best loaded model`);
});

test("an id nothing serves is a 404 that says why, in the surface's words", () => {
  const { registry, config } = fleet({ anthropic: { autoRoute: false } });
  const anthropic = resolveAgentModel(registry, config, chatRequest({ model: "claude-opus-4", resolve: true }), null);
  expect([anthropic?.status, anthropic?.message]).toEqual([404, `model "claude-opus-4" not found: no modelMap entry, no local model of that name, and anthropic.autoRoute is off`]);
  const responses = resolveAgentModel(registry, config, chatRequest({ surface: "responses", model: "gpt-5-codex", resolve: true }), null);
  expect([responses?.status, responses?.message]).toEqual([404, `model "gpt-5-codex" is neither mapped (modelMap) nor on any online node, and nothing could be auto-routed to it`]);
});
