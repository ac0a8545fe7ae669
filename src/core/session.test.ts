import { describe, expect, test } from "bun:test";
import type { Message } from "./conversation.ts";
import { sessionOf } from "./session.ts";
import { estimatePrompt } from "./tokens.ts";

const none = new Headers();
const system: Message = { role: "system", content: "You are a coding agent." };
const turn1: Message[] = [system, { role: "user", content: "read package.json" }];
const turn2: Message[] = [...turn1, { role: "assistant", content: "It names herd." }, { role: "user", content: "and its scripts?" }];
const chat = (messages: Message[]) => ({ messages, tools: [] });

describe("sessionOf", () => {
  test("a session header names the session; X-Herd-Session first; the key is hashed, never the client's string", () => {
    const claude = sessionOf(chat(turn1), new Headers({ "x-claude-code-session-id": "0000-abc" }))!;
    expect(claude.key).toStartWith("x-claude-code-session-id:");
    expect(claude.key).not.toContain("0000-abc");
    expect(sessionOf(chat(turn2), new Headers({ "x-claude-code-session-id": "0000-abc" }))!.key).toBe(claude.key);
    expect(sessionOf(chat(turn1), new Headers({ session_id: "0199a3c4" }))!.key).toStartWith("session_id:");
    const both = new Headers({ "x-herd-session": "mine", "x-claude-code-session-id": "0000-abc" });
    expect(sessionOf(chat(turn1), both)!.key).toStartWith("x-herd-session:");
    // A blank header is no session id.
    expect(sessionOf(chat(turn1), new Headers({ "x-herd-session": " " }))!.key).toStartWith("prefix:");
  });

  test("without a header, the system text and first user message identify the conversation, turn after turn", () => {
    const key = sessionOf(chat(turn1), none)!.key;
    expect(key).toStartWith("prefix:");
    expect(sessionOf(chat(turn2), none)!.key).toBe(key);
    expect(sessionOf(chat([...turn2, { role: "system", content: "mid-conversation note" }]), none)!.key).toBe(key);
    expect(sessionOf(chat([system, { role: "user", content: "read README.md" }]), none)!.key).not.toBe(key);
    expect(sessionOf(chat([{ role: "system", content: "Another agent." }, turn1[1]!]), none)!.key).not.toBe(key);
  });

  test("cachedTokens: what the last turn's node evaluated and wrote, up to the last assistant reply", () => {
    expect(sessionOf(chat(turn1), none)!.cachedTokens).toBe(0);
    const tools = [{ name: "Read", description: "Reads a file" }];
    const second = sessionOf({ messages: turn2, tools }, none)!;
    expect(second.cachedTokens).toBe(estimatePrompt({ messages: turn2.slice(0, 3), tools }));
    expect(second.cachedTokens).toBeLessThan(estimatePrompt({ messages: turn2, tools }));
  });

  test("no turns and no header: no session (a generate prompt, an embedding)", () => {
    expect(sessionOf({ tools: [] }, none)).toBeUndefined();
    expect(sessionOf(chat([system]), none)).toBeUndefined();
    expect(sessionOf({ tools: [] }, new Headers({ "x-herd-session": "s1" }))).toEqual({ key: expect.stringMatching(/^x-herd-session:/), cachedTokens: 0 });
  });
});
