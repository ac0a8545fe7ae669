// The config's modelMap: globs ("claude-sonnet-*") → the model herd serves.
// The first matching entry wins; an exact key beats any glob.
const compiled = new Map<string, RegExp>();

export function resolveAlias(model: string, modelMap: Record<string, string>): string {
  // Own keys only: a client's "toString" or "constructor" is a model name, not a property of every object.
  if (Object.hasOwn(modelMap, model)) return modelMap[model]!;
  for (const [pattern, target] of Object.entries(modelMap)) {
    if (pattern.includes("*") && globToRegExp(pattern).test(model)) return target;
  }
  return model;
}

export function globToRegExp(glob: string): RegExp {
  let re = compiled.get(glob);
  if (!re) {
    re = new RegExp(`^${glob.split("*").map((part) => part.replace(/[.+?^${}()|[\]\\]/g, "\\$&")).join(".*")}$`, "i");
    compiled.set(glob, re);
  }
  return re;
}
