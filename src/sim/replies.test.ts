// The sim's deliberate tool calls: only a `sim: call` line sets one off, one step per assistant turn.
import { expect, test } from "bun:test";
import { reply, type ToolSpec } from "./replies.ts";

const tools: ToolSpec[] = [
  { function: { name: "Bash", parameters: { type: "object", properties: { command: { type: "string" } }, required: ["command"] } } },
  { function: { name: "Read", parameters: { type: "object", properties: { file_path: { type: "string" } } } } },
];
const run = (messages: { role: string; content: string }[]) => reply({ model: "m", messages, tools });

test("a prompt that names a tool gets text, not a call", () => {
  expect(run([{ role: "user", content: "Use Bash or Read, whichever you like" }]).toolCall).toBeUndefined();
});

test("each sim: call line is one step, taken in order, then text", () => {
  const ask = { role: "user", content: 'do it\nsim: call Bash {"command":"echo hi"}\nsim: call Read' };
  expect(run([ask]).toolCall).toMatchObject({ name: "Bash", arguments: { command: "echo hi" } });
  const step2 = run([ask, { role: "assistant", content: "" }, { role: "tool", content: "hi" }]);
  expect(step2.toolCall).toMatchObject({ name: "Read", arguments: { file_path: "example file path" } });
  const done = run([ask, { role: "assistant", content: "" }, { role: "tool", content: "hi" }, { role: "assistant", content: "" }, { role: "tool", content: "{}" }]);
  expect(done.toolCall).toBeUndefined();
  expect(done.content.join("").length).toBeGreaterThan(0);
});

test("a step naming a tool the request does not offer is answered in text that says so", () => {
  const r = run([{ role: "user", content: "sim: call mcp__docs__search" }]);
  expect(r.toolCall).toBeUndefined();
  expect(r.content.join("")).toContain("The tool mcp__docs__search is not among the tools offered (Bash, Read).");
});

test("the answer is about what the user asked, not about an agent's system reminders", () => {
  const r = reply({ model: "m", messages: [{ role: "user", content: "<system-reminder>\nAttribution for git commits\n</system-reminder>\nExplain queues" }] });
  expect(r.content.join("")).toContain("Explain queues");
  expect(r.content.join("")).not.toContain("Attribution");
});

test("{{tool_result}} in a step's string arguments is the last tool result's text", () => {
  const ask = { role: "user", content: 'sim: call Read\nsim: call Bash {"command":"echo {{tool_result}}","n":1}' };
  const step2 = run([ask, { role: "assistant", content: "" }, { role: "tool", content: "the lead said main" }]);
  expect(step2.toolCall).toMatchObject({ name: "Bash", arguments: { command: "echo the lead said main", n: 1 } });
});
