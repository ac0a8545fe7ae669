// What herd pastes into a worker's pane: the turn's text with its control
// characters made visible. A raw one would act on the terminal instead of
// reaching the worker: ^C interrupts it, ^D ends its input, ESC could end a
// bracketed paste early or drive a TUI. Each becomes its Unicode control
// picture (U+2400 + code, ␡ for DEL); newlines and tabs stay, CRLF becomes LF.
export function pasteable(text: string): string {
  return text.replaceAll("\r\n", "\n").replace(/[\x00-\x08\x0b-\x1f\x7f]/g, (c) => String.fromCharCode(c === "\x7f" ? 0x2421 : 0x2400 + c.charCodeAt(0)));
}
