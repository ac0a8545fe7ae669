// What callers send, checked once for both faces: REST bodies and MCP tool
// arguments use the same fields, defaults and clamps (the seed's numbers), and
// the same rule for a field the route does not know: a 400 naming it (inputOf).
import * as v from "valibot";
import { formatIssues } from "../config/problems.ts";
import { type Answer, badRequest } from "./answers.ts";

const SEND_TIMEOUT = { defaultMs: 25_000, maxMs: 120_000 };
const ASK_TIMEOUT = { defaultMs: 55_000, maxMs: 115_000 };

const text = v.string("expected a string");
const nonBlank = v.pipe(text, v.check((s) => s.trim() !== "", "must not be blank"));
const flag = v.boolean("expected true or false");
/** Out-of-range values are clamped into [1, max], not refused (the seed's rule). */
const timeout = ({ defaultMs, maxMs }: typeof SEND_TIMEOUT) =>
  v.optional(
    v.pipe(
      v.number("expected a number of milliseconds"),
      v.transform((n) => Math.min(maxMs, Math.max(1, Math.round(n)))),
    ),
    defaultMs,
  );

/** true/false, or "true"/"false" as a query string carries them. */
const queryFlag = v.pipe(
  v.union([flag, v.picklist(["true", "false"])], "expected true or false"),
  v.transform((f) => f === true || f === "true"),
);

export const sendFields = { content: nonBlank, turnId: v.optional(nonBlank), timeoutMs: timeout(SEND_TIMEOUT), wait: v.optional(flag, true) };
/** The id of the turn a worker answers (typed with the turn): bounded, as it is only ever compared. */
const turnRef = v.optional(v.pipe(nonBlank, v.maxLength(64, "expected a turn id (t-…) of at most 64 characters")));
/** No blank check: a missing or empty reply is delivered as "" (the seed). turnDone is herd's hook: see docs/agents.md. */
export const replyFields = { content: v.optional(text, ""), turn: turnRef, turnDone: v.optional(flag, false) };
export const askFields = { question: nonBlank, turn: turnRef, timeoutMs: timeout(ASK_TIMEOUT) };
export const peekFields = { peek: v.optional(queryFlag, false) };
export const spawnFields = {
  role: v.optional(text),
  profile: v.optional(text),
  cwd: v.optional(nonBlank),
  worktree: v.optional(v.union([flag, text], "expected true, false or a ticket")),
  ticket: v.optional(text),
};

/**
 * A route's input, on either face: an unknown field is a 400 that names it and lists the known ones,
 * so a typo (timeoutMS, peak) is never silently dropped into a default.
 */
export const inputOf = <E extends v.ObjectEntries>(entries: E) => v.strictObject(entries);

export type SendInput = v.InferOutput<v.ObjectSchema<typeof sendFields, undefined>>;
export type ReplyInput = v.InferOutput<v.ObjectSchema<typeof replyFields, undefined>>;
export type AskInput = v.InferOutput<v.ObjectSchema<typeof askFields, undefined>>;
export type SpawnInput = v.InferOutput<v.ObjectSchema<typeof spawnFields, undefined>>;

/** The input checked against `schema`, or a 400 bad_request naming each bad field. */
export function check<S extends v.GenericSchema>(schema: S, input: unknown): v.InferOutput<S> | Answer {
  const parsed = v.safeParse(schema, input);
  return parsed.success ? parsed.output : badRequest(formatIssues(parsed.issues, schema).join("; "));
}
