// The text of types.ts, embedded in the binary so `herd init` can give editors the config's types.
// @ts-expect-error -- Bun imports any file as a string with this attribute; tsc cannot model that.
import source from "./types.ts" with { type: "text" };

export const typesSource: string = source;
