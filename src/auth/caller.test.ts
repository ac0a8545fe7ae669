import { expect, test } from "bun:test";
import { Caller, KeyUsage } from "./caller.ts";
import type { ClientEntry } from "../config/credentials/keys.ts";
import { Secret } from "../config/credentials/secrets.ts";

const key = (entry: Partial<ClientEntry>, now = () => 0) => new Caller({ name: "k", key: new Secret("sk-test"), ...entry } as ClientEntry, new KeyUsage(now));
const modelMap = { "claude-opus-*": "llama3.3:70b", coder: "qwen2.5-coder:7b" };

test("what would serve is checked, not the name asked for: a claude-* entry allows nothing by itself", () => {
  const coder = key({ models: ["qwen2.5-coder:*", "claude-*"] });
  expect(coder.modelRefusal("claude-sonnet-4-5", "qwen2.5-coder:7b", [], modelMap)).toBeNull();
  expect(coder.modelRefusal("claude-sonnet-4-5", "llama3.3:70b", [], modelMap)?.message).toBe(
    `key "k" may not use model "claude-sonnet-4-5" (it stands for "llama3.3:70b"); it may use "qwen2.5-coder:*", "claude-*" (auth.clients[].models)`,
  );
  // An alias is judged by its target, as a request or as a fallback.
  expect(coder.modelRefusal("coder", "coder", [], modelMap)).toBeNull();
  expect(coder.modelRefusal("qwen2.5-coder:7b", "qwen2.5-coder:7b", ["coder", "claude-opus-4-1"], modelMap)?.message).toContain(`"claude-opus-4-1" (it stands for "llama3.3:70b")`);
  // A glob is tried on the name as served too: "qwen2.5-coder" is "qwen2.5-coder:latest".
  expect(coder.modelRefusal("qwen2.5-coder", "qwen2.5-coder", [], {})).toBeNull();
  expect(coder.modelRefusal("llama3.2", "llama3.2", [], {})?.message).toBe(`key "k" may not use model "llama3.2"; it may use "qwen2.5-coder:*", "claude-*" (auth.clients[].models)`);
  expect(key({}).modelRefusal("anything", "llama3.3:70b", ["x"], modelMap)).toBeNull();
});

test("only the pull permission lets a key auto-pull", () => {
  expect(key({}).mayPull).toBe(false);
  expect(key({ permissions: ["pull"] }).mayPull).toBe(true);
});

test("take() draws on the same per-minute budget as enter(), and holds no place in flight", () => {
  const usage = new KeyUsage(() => 0);
  const entry = { name: "k", key: new Secret("sk-test"), rateLimit: { requestsPerMinute: 2 }, maxInFlight: 1 } as ClientEntry;
  const caller = new Caller(entry, usage);
  expect(caller.take()).toBeNull();
  expect(caller.enter()).toBeNull();
  expect(caller.take()).toMatchObject({ status: 429, retryAfterS: 30 });
  caller.leave();
  expect(caller.enter()).toMatchObject({ status: 429 });
});
