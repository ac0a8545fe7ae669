import { expect, test } from "bun:test";
import { clientTag } from "./herd-tags.ts";

test("a tag that passes for key: is dropped: any case, compatibility forms, marks, invisible characters, other scripts' lookalikes", () => {
  for (const tag of ["key:ops", "KEY:ops", "Key:ops", "\uff4b\uff45\uff59\uff1aops", "k\u200bey:ops", "ke\u0301y:ops", "\u043a\u0435\u0443:ops", "\u041a\u0415\u0423:ops", "key\u2236ops", "\u212aey:ops"]) {
    expect([tag, clientTag(tag)]).toEqual([tag, null]);
  }
});

test("one that passes for user: is a user tag, spelled as herd spells it; any other tag is kept as it came", () => {
  expect(clientTag("User:alice")).toBe("user:alice");
  expect(clientTag("us\u0435r\uff1aAlice")).toBe("user:Alice");
  expect(clientTag("user:alice")).toBe("user:alice");
  expect(clientTag("\u00fcser:x")).toBe("user:x");
  for (const tag of ["keys:x", "monkey:x", "ke y:x", "key", "kex:ops", "chat-ui", "project:prod", "Zoë 💥"]) expect(clientTag(tag)).toBe(tag);
});
