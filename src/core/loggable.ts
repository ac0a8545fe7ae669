// Text from outside (a platform's answer, a node's report) that herd logs, keeps and shows: a control character in it
// (a CR/LF, an ESC opening a terminal sequence) could forge a log line or repaint the operator's terminal, and a long
// one would be kept and shown whole. So each control character becomes U+FFFD, which shows that one was there (as
// does a lone surrogate, which has no UTF-8 form), and the text is cut to a length.

/** C0 and C1 controls, DEL, and the Unicode line and paragraph separators some log viewers break lines at. */
const CONTROL = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/g;

/** `text` with each control character replaced by U+FFFD, cut to `maxChars` (then ending in "…"), never inside a character. */
export function loggable(text: string, maxChars: number): string {
  const whole = text.toWellFormed();
  let shown = whole;
  if (whole.length > maxChars) {
    const high = whole.charCodeAt(maxChars - 1);
    shown = `${whole.slice(0, high >= 0xd800 && high <= 0xdbff ? maxChars - 1 : maxChars)}…`;
  }
  return shown.replace(CONTROL, "\uFFFD");
}
