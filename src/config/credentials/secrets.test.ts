import { expect, test } from "bun:test";
import * as v from "valibot";
import { isSecretField, MASK, maskSecrets, secretSchema } from "./secrets.ts";

const schema = v.strictObject({
  primary: v.optional(secretSchema),
  clients: v.array(v.strictObject({ name: v.string(), key: secretSchema })),
  count: v.optional(v.number()),
});

test("secret fields are masked by the schema, wherever they sit, whatever their name", () => {
  const parsed = v.parse(schema, { primary: "lead-credential", clients: [{ name: "app", key: { env: "APP_KEY" } }], count: 3 });
  expect(maskSecrets(schema, parsed)).toEqual({ primary: MASK, clients: [{ name: "app", key: MASK }], count: 3 });
  expect(maskSecrets(schema, v.parse(schema, { clients: [] }))).toEqual({ clients: [] });
  expect([isSecretField(schema.entries.primary), isSecretField(schema.entries.count)]).toEqual([true, false]);
});

test("a Secret shows neither its value nor its source to anything that walks it", () => {
  const secret = v.parse(secretSchema, "literal-value");
  expect([JSON.stringify(secret), String(secret), JSON.stringify(Object.entries(secret))]).toEqual([`"${MASK}"`, MASK, "[]"]);
});
