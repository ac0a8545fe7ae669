// Two tool calls local models make that Codex cannot run as made. Codex's `exec`
// tool (code mode) documents its nested tools as `await tools.exec_command(…)`,
// and its instructions run `apply_patch` in the shell (a binary on the sandbox
// PATH); models read both as tools of their own. Each such call is rewritten
// into one Codex runs:
// - `exec_command` (a top-level function call) → a custom_tool_call on `exec`
//   whose JavaScript makes the nested call and hands back its result:
//   `text(await tools.exec_command({"cmd":"ls"}));`
// - `apply_patch` → `exec_command` with `cmd: "apply_patch <<'EOF'\n<patch>\nEOF"`
//   (the patch is the argument holding "*** Begin Patch", else `input`, or the
//   raw text; `workdir` is kept). Codex's exec_command intercepts an
//   apply_patch heredoc and applies it as its own apply_patch tool would; when
//   exec_command is reachable only through exec, the first rewrite follows.
// Both apply even when the request also offers the tool by that name: what
// runs is the same tool, and Codex builds differ in which ones they expose.
import { parseArguments } from "../core/tool-arguments.ts";

export interface OfferedTool {
  kind: "function" | "custom";
  /** The namespace a tool was declared in (Codex's additional_tools), echoed on its calls. */
  namespace?: string;
}

/** The tools a request offers, by name. */
export type Offered = Map<string, OfferedTool>;

/** A tool call as the model made it; arguments as Ollama parsed them (usually an object). */
export interface Call {
  name: string;
  args: unknown;
}

/** The call Codex can run; `warn` hears of each rewrite. */
export function codexRewrite(call: Call, offered: Offered, warn: (message: string) => void): Call {
  let out = call;
  const exec = offered.get("exec")?.kind === "custom";
  if (out.name === "apply_patch" && (exec || offered.get("exec_command")?.kind === "function")) {
    const command = patchCommand(out.args);
    if (command) {
      warn("codex rewrite: an apply_patch tool call became an exec_command heredoc (apply_patch is a binary on the sandbox PATH, not a tool)");
      out = { name: "exec_command", args: command };
    }
  }
  if (out.name === "exec_command" && exec) {
    warn("codex rewrite: a top-level exec_command call became a custom_tool_call on exec (Codex runs its nested tools inside exec)");
    out = { name: "exec", args: { input: `text(await tools.exec_command(${JSON.stringify(parseArguments(out.args) ?? out.args)}));` } };
  }
  return out;
}

function patchCommand(args: unknown): Record<string, unknown> | null {
  const parsed = parseArguments(args) ?? args; // text that is not JSON is the patch itself
  const fields = parsed && typeof parsed === "object" ? Object.values(parsed).flat() : [parsed];
  const patch = fields.find((v) => typeof v === "string" && v.includes("*** Begin Patch")) ?? (parsed as { input?: unknown }).input;
  if (typeof patch !== "string" || !patch.trim()) return null;
  const workdir = (parsed as { workdir?: unknown }).workdir;
  return { cmd: heredoc(patch), ...(typeof workdir === "string" ? { workdir } : {}) };
}

// The delimiter must not stand alone on a line of the patch, or the shell would end the heredoc there.
function heredoc(patch: string): string {
  let tag = "EOF";
  while (patch.split("\n").includes(tag)) tag += "_";
  return `apply_patch <<'${tag}'\n${patch.endsWith("\n") ? patch : `${patch}\n`}${tag}`;
}
