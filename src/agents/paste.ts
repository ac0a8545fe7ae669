// What herd pastes into a worker's pane: the turn's text with its control
// characters made visible. A raw one would act on the terminal instead of
// reaching the worker: ^C interrupts it, ^D ends its input, ESC could end a
// bracketed paste early or drive a TUI. Each becomes its Unicode control
// picture (U+2400 + code, ␡ for DEL); newlines and tabs stay, CRLF becomes LF.
//
// A turn that opens with `!` or `/` would be a command to the agent's composer, not text
// for its model: Claude Code 2.1.332 takes a `!` typed or pasted into its empty input box as
// bash mode (cli.js: value==="" && text.startsWith("!")) and runs a known command on
// `text.trim().startsWith("/")`, so no leading blank helps; Codex's composer runs `/` commands
// and `!` shell commands from the start of its text. Such a turn gets a first line of herd's
// own, so the composer sees text and the model the turn's text whole, on the lines after it.
export const TEXT_LEAD = "Your lead's message:";
const COMMAND_START = /^\s*[!/]/;

export function pasteable(text: string): string {
  const visible = text.replaceAll("\r\n", "\n").replace(/[\x00-\x08\x0b-\x1f\x7f]/g, (c) => String.fromCharCode(c === "\x7f" ? 0x2421 : 0x2400 + c.charCodeAt(0)));
  return COMMAND_START.test(visible) ? `${TEXT_LEAD}\n${visible}` : visible;
}
