// herd's own requests to its own routes (the benchmark runner pulls models and
// sends chats through the router): a credential made fresh by each process,
// held only in memory, accepted wherever the admin token is.
import { randomBytes } from "node:crypto";
import type { Presented } from "./tokens.ts";

const TOKEN = randomBytes(32).toString("base64url");

/** Headers that let a request from this process through the router's guard. */
export function internalHeaders(): Record<string, string> {
  return { authorization: `Bearer ${TOKEN}` };
}

export function isInternal(presented: Presented): boolean {
  return presented.is(TOKEN);
}
