// What kind of model a name is, for substitutions that must not surprise the
// client: a chat request never lands on an embedding model, an image request
// never on a text-only one, a tool call never on a model without tools.
// Ollama's tags do not say, so this reads the name as Ollama's library does.
import { withoutNamespace } from "./model-name.ts";
import { reasons } from "./thinking-models.ts";

export type Category = "embedding" | "vision" | "coding" | "reasoning" | "general";

export interface Traits {
  category: Category;
  vision: boolean;
  tools: boolean;
}

const EMBEDDING = /(embed|^bge|minilm|^e5-|^gte-|^snowflake-arctic-embed|^paraphrase)/;
const VISION = /(llava|vision|-vl\b|vl:|^gemma3(?!n)|moondream|minicpm-v|^llama4|^mistral-small3\.[12]|granite3\.2-vision)/;
const CODING = /(coder|^codellama|^codestral|^starcoder|^devstral|^codegemma|^granite-code|^codeqwen)/;
// Families whose Ollama templates carry tool calls.
const TOOLS = /(^llama3\.[123]|^llama4|^qwen2\.5|^qwen3|^mistral|^mixtral|^gpt-oss|^command-r|^granite3|^hermes3|^firefunction|^devstral|^magistral|^cogito|^smollm2|^nemotron)/;

export function modelTraits(name: string): Traits {
  const base = withoutNamespace(name).toLowerCase();
  const category: Category = EMBEDDING.test(base) ? "embedding" : VISION.test(base) ? "vision" : CODING.test(base) ? "coding" : reasons(name) ? "reasoning" : "general";
  return { category, vision: category === "vision", tools: category !== "embedding" && TOOLS.test(base) };
}

/** Whether `candidate` can stand in for `requested` for a request with these needs. */
export function canSubstitute(requested: string, candidate: string, needs: { vision: boolean; tools: boolean }): boolean {
  const [want, have] = [modelTraits(requested), modelTraits(candidate)];
  if (want.category !== have.category) return false;
  if ((needs.vision || want.vision) && !have.vision) return false;
  return !needs.tools || have.tools;
}
