// The JSON Schema of herd's config, for editors of herd.config.json / .yaml.
import { toJsonSchema } from "@valibot/to-json-schema";
import { herdConfigSchema } from "./schema.ts";

export function configJsonSchema(): object {
  // "ignore": custom checks (URL shape, cross-field rules) have no JSON Schema form; herd still enforces them.
  const schema = toJsonSchema(herdConfigSchema, { errorMode: "ignore" });
  return { ...schema, title: "herd config" };
}
