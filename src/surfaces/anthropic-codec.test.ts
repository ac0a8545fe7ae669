import { expect, test } from "bun:test";
import { messagesToOllama } from "./anthropic-codec.ts";

const messages = [{ role: "user", content: "hi" }];

test("max_tokens and the sampling fields become Ollama's options", () => {
  const t = messagesToOllama({ messages, max_tokens: 200, temperature: 0.2, top_p: null, top_k: 40 }, 4096);
  expect(typeof t === "string" ? t : t.body.options).toEqual({ num_predict: 200, temperature: 0.2, top_k: 40 });
  const defaults = messagesToOllama({ messages }, 4096);
  expect(typeof defaults === "string" ? defaults : defaults.body.options).toEqual({ num_predict: 4096 });
});

test("a sampling field that is not a number, or a max_tokens below 1, is refused by name", () => {
  expect(messagesToOllama({ messages, top_k: "40" }, 4096)).toBe("top_k: expected a number");
  expect(messagesToOllama({ messages, max_tokens: 0 }, 4096)).toBe("max_tokens: expected a whole number of at least 1");
});
