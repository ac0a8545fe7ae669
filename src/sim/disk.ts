// The models on a simulated Ollama node's disk. Every spec the node has been
// given is remembered, so a model keeps its spec when re-listed or re-pulled.
import { catalogSpec, normalizeName, specFor, type SimModelSpec } from "./models.ts";

export interface DiskModel {
  spec: SimModelSpec;
  modifiedAt: number;
}

export class Disk {
  private readonly known = new Map<string, SimModelSpec>();
  private models = new Map<string, DiskModel>();

  /** Replaces what is on disk; a spec's unspecified fields are guessed from its name. */
  replace(models: readonly (string | SimModelSpec)[]): void {
    const specs = models.map((m) => {
      if (typeof m === "string") return this.known.get(normalizeName(m)) ?? specFor(m);
      if (typeof m?.name !== "string") throw new Error("a model spec needs a name");
      return { ...specFor(m.name), ...m, name: normalizeName(m.name) };
    });
    this.models.clear();
    specs.forEach((spec, i) => {
      this.known.set(spec.name, spec);
      // Stable, staggered dates so /api/tags ordering is deterministic.
      this.models.set(spec.name, { spec, modifiedAt: Date.UTC(2025, 5, 1) - i * 86_400_000 });
    });
  }

  /** The model under any spelling of its name ("llama3.2" is "llama3.2:latest"). */
  get(name: string): DiskModel | undefined {
    return this.models.get(normalizeName(name));
  }

  has(name: string): boolean {
    return this.get(name) !== undefined;
  }

  /** Names in the order they were put on disk. */
  names(): string[] {
    return [...this.models.keys()];
  }

  newestFirst(): DiskModel[] {
    return [...this.models.values()].sort((a, b) => b.modifiedAt - a.modifiedAt);
  }

  /** The spec a pull of this name would fetch, if the registry has one. */
  pullable(name: string): SimModelSpec | undefined {
    return this.known.get(normalizeName(name)) ?? catalogSpec(name);
  }

  /** A model just pulled. */
  add(spec: SimModelSpec): void {
    this.models.set(spec.name, { spec, modifiedAt: Date.now() });
  }

  delete(name: string): void {
    this.models.delete(normalizeName(name));
  }

  /** Saves what is on disk; the returned function puts it back. */
  checkpoint(): () => void {
    const saved = new Map(this.models);
    return () => {
      this.models = saved;
    };
  }
}
