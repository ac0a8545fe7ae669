// Ollama's naming rule, used everywhere herd compares model names: the tag is
// optional and means ":latest" ("llama3.2" is "llama3.2:latest"). A colon
// inside a path segment's prefix ("hf.co/org/repo:Q4_K_M") is a tag too.
import { nameFault } from "../core/client-names.ts";
import * as v from "valibot";

export function normalizeModelName(name: string): string {
  const trimmed = name.trim();
  return trimmed.lastIndexOf(":") > trimmed.lastIndexOf("/") ? trimmed : `${trimmed}:latest`;
}

/** core/client-names.ts:nameFault as a step of a body's schema: its message goes under the field's name. */
export const modelNameCheck = v.check<string, (issue: v.CheckIssue<string>) => string>(
  (name) => nameFault(name) === null,
  (issue) => nameFault(issue.input)!,
);

/** The form names are compared in: "Llama3.2" and "llama3.2:latest" have one key. */
export function modelKey(name: string): string {
  return normalizeModelName(name).toLowerCase();
}

export function sameModel(a: string, b: string): boolean {
  return modelKey(a) === modelKey(b);
}

/** The name without the registry and namespace in front of it ("hf.co/org/qwen3:8b" → "qwen3:8b"): what its family is read from. */
export function withoutNamespace(name: string): string {
  return name.replace(/^.*\//, "");
}
