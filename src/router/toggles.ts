// The two settings an operator may flip while herd runs (POST /dashboard/api/settings):
// features.autoPull and features.vramFallback. A flip lives in memory only; a restart
// goes back to the config file. A config reload keeps it: the operator flipped it after
// the file was written, and saving an unrelated edit should not silently undo that.
import type { Config } from "../config/schema.ts";

/** Wire name → the config's features key. */
const FEATURES = { auto_pull: "autoPull", vram_fallback: "vramFallback" } as const;

export type ToggleName = keyof typeof FEATURES;
export type ToggleValues = Record<ToggleName, boolean>;
export const TOGGLE_NAMES = Object.keys(FEATURES) as ToggleName[];

export class Toggles {
  private overrides: Partial<ToggleValues> = {};

  set(changes: Partial<ToggleValues>): void {
    this.overrides = { ...this.overrides, ...changes };
  }

  /** The values in effect: the override when there is one, else the config's. */
  current(config: Config): ToggleValues {
    const value = (name: ToggleName) => this.overrides[name] ?? config.features[FEATURES[name]];
    return { auto_pull: value("auto_pull"), vram_fallback: value("vram_fallback") };
  }

  /** `config` as the router should read it for one request: the overrides applied. */
  apply(config: Config): Config {
    if (!Object.keys(this.overrides).length) return config;
    const { auto_pull, vram_fallback } = this.current(config);
    return { ...config, features: { ...config.features, autoPull: auto_pull, vramFallback: vram_fallback } };
  }
}
