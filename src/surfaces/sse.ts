// Server-sent events as herd's streaming surfaces write them: an optional
// `event:` line naming the event, one `data:` line of JSON, and the blank line
// that ends the event. JSON.stringify never emits a raw newline, so one data
// line always holds the whole value.

/** The content type of a streamed answer. */
export const EVENT_STREAM = "text/event-stream; charset=utf-8";

/** One event: `data` as JSON, under the name `event` when there is one. */
export function sse(data: unknown, event?: string): string {
  return `${event === undefined ? "" : `event: ${event}\n`}data: ${JSON.stringify(data)}\n\n`;
}
