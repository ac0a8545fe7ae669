// Anthropic tool definitions as the conversation's tools. Tool search (Claude Code's
// default): a tool with defer_loading stays out of the model's list until a
// tool_reference block in a tool_result loads it, so a deferred tool never
// referenced (Claude Code's "never call this" placeholder) never reaches the
// model. Ollama has no tool_choice: "none" sends no tools, "tool" only the
// named one, and "any"/"tool" add a system instruction to call it.

import type { Tool } from "../core/conversation.ts";

type Json = Record<string, unknown>;

export interface Tools {
  list: Tool[];
  instruction: string;
}

/** `loaded`: the tools the conversation's tool_reference blocks name. */
export function toolsOf(tools: unknown, choice: unknown, loaded: ReadonlySet<string>): Tools | string {
  if (tools === undefined || tools === null) return { list: [], instruction: "" };
  if (!Array.isArray(tools)) return "tools: expected a list of tools";
  const list: Tool[] = [];
  for (const [i, t] of (tools as Json[]).entries()) {
    if (typeof t?.name !== "string" || !t.name) return `tools[${i}].name: expected a string`;
    const schema = t.input_schema;
    if (!schema || typeof schema !== "object") {
      return `tools[${i}].input_schema: expected a JSON schema object (herd serves custom tools only${typeof t.type === "string" ? `, not "${t.type}"` : ""})`;
    }
    if (t.defer_loading === true && !loaded.has(t.name)) continue;
    list.push({ name: t.name, description: typeof t.description === "string" ? t.description : "", parameters: schema as Json });
  }
  if (choice === undefined || choice === null) return { list, instruction: "" };
  const type = (choice as Json).type;
  if (type === "auto") return { list, instruction: "" };
  if (type === "none") return { list: [], instruction: "" };
  if (type === "any") return { list, instruction: list.length ? "You must answer by calling one of the provided tools." : "" };
  if (type === "tool") {
    const name = (choice as Json).name;
    const named = list.filter((t) => t.name === name);
    if (!named.length) return `tool_choice.name: expected the name of one of the tools, got ${JSON.stringify(name)}`;
    return { list: named, instruction: `You must answer by calling the tool "${name}".` };
  }
  return `tool_choice.type: expected "auto", "any", "tool" or "none"`;
}

/** What the model reads for a tool_result's tool_reference blocks: the tools are in its list from now on. */
export function loadedToolsText(names: string[]): string {
  return `Tools loaded: ${names.join(", ")}. They are in your tool list now; call them like any other tool.`;
}
