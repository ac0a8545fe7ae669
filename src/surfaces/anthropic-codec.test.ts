import { expect, test } from "bun:test";
import { messagesConversation, StopScanner } from "./anthropic-codec.ts";
import { signatureOf } from "./anthropic-thinking.ts";

const messages = [{ role: "user", content: "hi" }];

test("max_tokens and the sampling fields become Ollama's options", () => {
  const t = messagesConversation({ messages, max_tokens: 200, temperature: 0.2, top_p: null, top_k: 40 }, 4096);
  expect(typeof t === "string" ? t : t.conversation.options).toEqual({ num_predict: 200, temperature: 0.2, top_k: 40 });
  const defaults = messagesConversation({ messages }, 4096);
  expect(typeof defaults === "string" ? defaults : defaults.conversation.options).toEqual({ num_predict: 4096 });
});

test("a sampling field that is not a number, or a max_tokens below 1, is refused by name", () => {
  expect(messagesConversation({ messages, top_k: "40" }, 4096)).toBe("top_k: expected a number");
  expect(messagesConversation({ messages, max_tokens: 0 }, 4096)).toBe("max_tokens: expected a whole number of at least 1");
});

/** The messages a Messages request becomes, or the refusal naming the field. */
function conversationMessages(req: Record<string, unknown>): unknown {
  const t = messagesConversation(req, 4096);
  return typeof t === "string" ? t : t.conversation.messages;
}

test("the top-level system text, a string or text blocks, opens the conversation, with the tool_choice instruction after it", () => {
  const tools = [{ name: "read", input_schema: { type: "object" } }];
  const req = { system: [{ type: "text", text: "Be brief." }, { type: "text", text: "Cite files." }], tools, tool_choice: { type: "any" }, messages };
  expect(conversationMessages(req)).toEqual([
    { role: "system", content: "Be brief.\nCite files.\n\nYou must answer by calling one of the provided tools." },
    { role: "user", content: "hi" },
  ]);
  expect(conversationMessages({ system: [{ type: "image" }], messages })).toBe("system: expected a string or a list of text blocks");
});

test("a system message in the conversation stays where it stands, right after a user message; anywhere else it is refused, saying why", () => {
  const mid = { role: "system", content: "Now answer in French." };
  expect(conversationMessages({ messages: [...messages, mid] })).toEqual([{ role: "user", content: "hi" }, { role: "system", content: "Now answer in French." }]);
  expect(conversationMessages({ messages: [mid, ...messages] })).toBe(
    'messages[0].role: "system" cannot be the first message: opening instructions go in the top-level system field',
  );
  expect(conversationMessages({ messages: [...messages, { role: "assistant", content: "Salut" }, mid] })).toBe(
    'messages[2].role: a "system" message must directly follow a user message, not a message with role "assistant"',
  );
  expect(conversationMessages({ messages: [...messages, mid, mid] })).toBe('messages[2].role: a "system" message must directly follow a user message, not another system message');
  // One with no text only carries options (output_config.effort): it may stand anywhere, and adds nothing.
  expect(conversationMessages({ messages: [{ role: "system", content: [] }, ...messages] })).toEqual(messages);
});

test("a tool_use becomes a tool call, and the tool_result answering it a tool message named after that tool", () => {
  const turn = [
    { role: "user", content: "read a.ts" },
    { role: "assistant", content: [{ type: "text", text: "Reading." }, { type: "tool_use", id: "toolu_1", name: "read", input: { path: "a.ts" } }] },
    {
      role: "user",
      content: [
        { type: "tool_result", tool_use_id: "toolu_1", content: [{ type: "text", text: "line 1" }, { type: "text", text: "line 2" }, { type: "image", source: { type: "base64", data: "iVBO" } }] },
        { type: "tool_result", tool_use_id: "toolu_unknown", content: "no such file", is_error: true },
        { type: "text", text: "what does it do?" },
      ],
    },
  ];
  expect(conversationMessages({ messages: turn })).toEqual([
    { role: "user", content: "read a.ts" },
    { role: "assistant", content: "Reading.", toolCalls: [{ id: "toolu_1", name: "read", arguments: { path: "a.ts" } }] },
    { role: "tool", content: "line 1\nline 2", toolName: "read", toolCallId: "toolu_1", images: ["iVBO"] },
    { role: "tool", content: "Error: no such file", toolCallId: "toolu_unknown" },
    { role: "user", content: "what does it do?" },
  ]);
});

test("past thinking goes back as the message's thinking, from its text or from herd's own signature; redacted thinking is dropped", () => {
  const signed = { type: "thinking", thinking: "", signature: signatureOf("the user wants a haiku") };
  const turn = [
    ...messages,
    { role: "assistant", content: [{ type: "thinking", thinking: "short answer", signature: "sig" }, signed, { type: "text", text: "Hello." }] },
    { role: "user", content: "again" },
    { role: "assistant", content: [{ type: "redacted_thinking", data: "opaque" }] },
    { role: "user", content: "and again" },
  ];
  expect(conversationMessages({ messages: turn })).toEqual([
    ...messages,
    { role: "assistant", content: "Hello.", thinking: "short answer\nthe user wants a haiku" },
    { role: "user", content: "again" },
    { role: "user", content: "and again" },
  ]);
});

test("a content block herd cannot pass on is refused by its place and type; an image must be inline base64", () => {
  expect(conversationMessages({ messages: [{ role: "user", content: [{ type: "server_tool_use", id: "x" }] }] })).toBe(
    'messages[0].content[0].type: expected "text", "image", "document", "thinking", "tool_use" or "tool_result", got "server_tool_use"',
  );
  const url = { type: "image", source: { type: "url", url: "https://example.com/cat.png" } };
  expect(conversationMessages({ messages: [{ role: "user", content: [{ type: "text", text: "what is it?" }, url] }] })).toBe(
    "messages[0].content[1].source: expected a base64 image source (herd does not fetch image URLs)",
  );
  expect(conversationMessages({ messages: [{ role: "user", content: [{ type: "text", text: "what is it?" }, { type: "image", source: { type: "base64", data: "iVBO" } }] }] })).toEqual([
    { role: "user", content: "what is it?", images: ["iVBO"] },
  ]);
});

test("a message is refused when its role or content has no Ollama meaning, and so is an empty conversation", () => {
  expect(conversationMessages({ messages: [] })).toBe("messages: expected a non-empty list of messages");
  expect(conversationMessages({})).toBe("messages: expected a non-empty list of messages");
  expect(conversationMessages({ messages: [{ role: "tool", content: "x" }] })).toBe('messages[0].role: expected "user", "assistant" or "system"');
  expect(conversationMessages({ messages: [{ role: "user", content: 42 }] })).toBe("messages[0].content: expected a string or a list of content blocks");
  expect(conversationMessages({ messages: [{ role: "assistant", content: [{ type: "tool_use", name: "read" }] }] })).toBe("messages[0].content[0]: a tool_use block needs a string id and name");
});

test("stop_sequences go to Ollama as options.stop and to the answer's scanner; an empty one is refused", () => {
  const t = messagesConversation({ messages, stop_sequences: ["END", "\n\nHuman:"] }, 4096);
  expect(typeof t === "string" ? t : [t.stops, (t.conversation.options as { stop?: string[] }).stop]).toEqual([
    ["END", "\n\nHuman:"],
    ["END", "\n\nHuman:"],
  ]);
  expect(messagesConversation({ messages, stop_sequences: ["END", ""] }, 4096)).toBe("stop_sequences: expected a list of non-empty strings");
});

/** Feeds `pieces` to a scanner for `stops`: what it lets through after each, and what it still holds at the end. */
function scan(stops: string[], pieces: string[]) {
  const scanner = new StopScanner(stops);
  const sent = pieces.map((p) => scanner.push(p));
  return { sent, matched: scanner.matched, held: scanner.flush() };
}

test("without stop sequences the answer's text passes straight through", () => {
  expect(scan([], ["Hello", " wor", "ld"])).toEqual({ sent: ["Hello", " wor", "ld"], matched: null, held: "" });
});

test("the text is cut before a stop sequence, which is reported, and nothing after it is sent", () => {
  expect(scan(["END"], ["Hello END world", " more"])).toEqual({ sent: ["Hello ", ""], matched: "END", held: "" });
});

test("a stop sequence split across pieces is found: what could start it is held back meanwhile", () => {
  expect(scan(["END"], ["Hello E", "N", "D bye"])).toEqual({ sent: ["Hello ", "", ""], matched: "END", held: "" });
});

test("held text is let through as soon as it cannot start a stop sequence, and released at the end", () => {
  expect(scan(["END"], ["an E", "xit", " and E"])).toEqual({ sent: ["an ", "Exit", " and "], matched: null, held: "E" });
});

test("a held start that turns out wrong still holds back whatever could start the sequence anew", () => {
  expect(scan(["ab"], ["a", "a", "b"])).toEqual({ sent: ["", "a", ""], matched: "ab", held: "" });
});

test("of several stop sequences, the one that comes first in the text wins; the longest possible start of any is held", () => {
  expect(scan(["</answer>", "\n\n"], ["x\n\ny</answer>"])).toEqual({ sent: ["x"], matched: "\n\n", held: "" });
  expect(scan(["###", "</s>"], ["done</", "s", ">"])).toEqual({ sent: ["done", "", ""], matched: "</s>", held: "" });
  expect(scan(["###", "</s>"], ["done #", "#"])).toEqual({ sent: ["done ", ""], matched: null, held: "##" });
});
