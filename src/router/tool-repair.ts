// Tool-call repair. Local models sometimes write a tool call Ollama cannot
// parse (a trailing comma, single quotes, a missing brace); Ollama then hands
// it back as plain text and the agent sees prose instead of a call. When the
// request offered tools, text that looks like a call is held back, repaired,
// checked against the tool's schema, and sent as a real tool call; when repair
// fails, the text goes out unchanged. Counted per model (/fleet/queue).
import type { RepairCounts } from "../fleet/repair-stats.ts";
import type { Tool } from "../core/conversation.ts";
import { type Chunk, endOf } from "../core/events.ts";

// Text that may be the start of a tool call: a tag, a JSON object, or a fenced block.
const MAY_BE_CALL = /^\s*(<tool_call>|\{|```)/;
const PREFIXES = ["<tool_call>", "{", "```"];

/** Feeds an answer's chunks through; returns the chunks to send on. */
export class ToolCallRepair {
  private held: Chunk[] = [];
  private text = "";
  private holding = true;

  constructor(
    private readonly tools: Tool[],
    private readonly count: (outcome: keyof RepairCounts) => void,
  ) {}

  feed(chunk: Chunk): Chunk[] {
    if (!this.holding || chunk.events.some((e) => e.type === "tool_call")) return this.release(chunk);
    for (const e of chunk.events) if (e.type === "text") this.text += e.text;
    this.held.push(chunk);
    if (endOf(chunk)?.type === "done") return this.finish(chunk);
    const trimmed = this.text.trimStart();
    if (trimmed && !MAY_BE_CALL.test(trimmed) && !PREFIXES.some((p) => p.startsWith(trimmed))) return this.release();
    return [];
  }

  private release(chunk?: Chunk): Chunk[] {
    this.holding = false;
    const out = this.held.splice(0);
    if (chunk) out.push(chunk);
    return out;
  }

  // The call replaces the text it was read from: the answer ends in one chunk of the call and the done chunk's usage and end.
  private finish(done: Chunk): Chunk[] {
    if (!MAY_BE_CALL.test(this.text)) return this.release();
    this.count("attempts");
    const call = repairCall(this.text, this.tools);
    if (!call) {
      this.count("failures");
      return this.release();
    }
    this.count("successes");
    this.holding = false;
    this.held = [];
    const rest = done.events.filter((e) => e.type === "usage" || e.type === "done");
    return [{ model: done.model, events: [{ type: "tool_call", ...call }, ...rest] }];
  }
}

/** A tool call read out of `text`, repaired and valid for one of `tools`; null when none can be made. */
function repairCall(text: string, tools: Tool[]): { name: string; arguments: Record<string, unknown> } | null {
  const inner = text.replace(/<\/?tool_call>/g, "").replace(/^\s*```(?:json)?|```\s*$/g, "").trim();
  const parsed = parseLoose(inner);
  if (!parsed || typeof parsed !== "object") return null;
  const { name, arguments: args, parameters } = parsed as { name?: unknown; arguments?: unknown; parameters?: unknown };
  const tool = tools.find((t) => t.name === name);
  const input = typeof args === "string" ? parseLoose(args) : (args ?? parameters ?? {});
  if (!tool || !input || typeof input !== "object" || Array.isArray(input)) return null;
  return fitsSchema(input as Record<string, unknown>, tool.parameters) ? { name: tool.name, arguments: input as Record<string, unknown> } : null;
}

// JSON as models get it wrong: single quotes, trailing commas, unquoted keys, unclosed braces.
function parseLoose(text: string): unknown {
  const dropTrailingCommas = (t: string) => t.replace(/,\s*([}\]])/g, "$1");
  const attempts = [text, text.replace(/'/g, '"'), text.replace(/([{,]\s*)([A-Za-z_][\w-]*)\s*:/g, '$1"$2":')];
  for (const candidate of attempts) {
    for (const fixed of [candidate, dropTrailingCommas(closeBrackets(candidate))]) {
      try {
        return JSON.parse(fixed);
      } catch {
        // try the next repair
      }
    }
  }
  return null;
}

function closeBrackets(text: string): string {
  const stack: string[] = [];
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (inString) {
      if (c === "\\") i++;
      else if (c === '"') inString = false;
    } else if (c === '"') inString = true;
    else if (c === "{") stack.push("}");
    else if (c === "[") stack.push("]");
    else if (c === "}" || c === "]") stack.pop();
  }
  return text + (inString ? '"' : "") + stack.reverse().join("");
}

/** The part of a JSON schema the repair checks: required keys, and each property's type. */
interface Schema {
  properties?: Record<string, { type?: string }>;
  required?: string[];
}

function fitsSchema(input: Record<string, unknown>, parameters: Tool["parameters"]): boolean {
  if (!parameters) return true;
  const schema = parameters as Schema;
  if ((schema.required ?? []).some((key) => !(key in input))) return false;
  return Object.entries(schema.properties ?? {}).every(([key, prop]) => !(key in input) || matchesType(input[key], prop.type));
}

function matchesType(value: unknown, type: string | undefined): boolean {
  switch (type) {
    case "string":
      return typeof value === "string";
    case "number":
      return typeof value === "number";
    case "integer":
      return Number.isInteger(value);
    case "boolean":
      return typeof value === "boolean";
    case "array":
      return Array.isArray(value);
    case "object":
      return typeof value === "object" && value !== null && !Array.isArray(value);
    default:
      return true;
  }
}
