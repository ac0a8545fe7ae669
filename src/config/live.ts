// The running config: an immutable snapshot swapped atomically when the file
// changes. Requests keep the snapshot they started with; a bad edit keeps the
// last good one and records why, where operators look (/fleet/status).
import { type FSWatcher, watch } from "node:fs";
import { basename, dirname } from "node:path";
import { log } from "../log.ts";
import { ConfigError, type ConfigSnapshot, defaultSnapshot, loadConfig, type LoadOptions } from "./load.ts";
import type { Config } from "./schema.ts";

export interface ConfigStatus {
  path: string | null;
  hash: string;
  loaded_at: number;
  reloads: number;
  last_error: { message: string; problems: string[]; at: number; hash: string | null } | null;
}

type Listener = (next: ConfigSnapshot, previous: ConfigSnapshot) => void;
type ErrorListener = (error: NonNullable<ConfigStatus["last_error"]>) => void;

/** Applied to every loaded config: CLI and env overrides, the simulator's demo nodes. */
export type ConfigTransform = (config: Config) => Config;

export class LiveConfig {
  private snapshot: ConfigSnapshot;
  private lastError: ConfigStatus["last_error"] = null;
  private reloads = 0;
  private listeners = new Set<Listener>();
  private errorListeners = new Set<ErrorListener>();
  private watcher: FSWatcher | null = null;
  private debounce: Timer | null = null;
  private loading: Promise<void> = Promise.resolve();

  private constructor(
    initial: ConfigSnapshot,
    private readonly transform: ConfigTransform,
    private readonly options: LoadOptions,
  ) {
    this.snapshot = initial;
  }

  /** Loads `path` (or defaults when null); throws ConfigError when the first load fails. */
  static async open(path: string | null, transform: ConfigTransform = (c) => c, options: LoadOptions = {}): Promise<LiveConfig> {
    const first = path ? await loadConfig(path, options) : defaultSnapshot();
    return new LiveConfig({ ...first, config: transform(first.config) }, transform, options);
  }

  get current(): ConfigSnapshot {
    return this.snapshot;
  }

  get config(): Config {
    return this.snapshot.config;
  }

  onChange(listener: Listener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  onError(listener: ErrorListener): () => void {
    this.errorListeners.add(listener);
    return () => this.errorListeners.delete(listener);
  }

  status(): ConfigStatus {
    const { path, hash, loadedAt } = this.snapshot.source;
    return { path, hash, loaded_at: loadedAt / 1000, reloads: this.reloads, last_error: this.lastError };
  }

  /** Re-reads the file now; reloads are serialised so the last write always wins. */
  reload(): Promise<void> {
    this.loading = this.loading.then(() => this.reloadOnce());
    return this.loading;
  }

  private async reloadOnce(): Promise<void> {
    const path = this.snapshot.source.path;
    if (!path) return;
    try {
      const loaded = await loadConfig(path, this.options);
      if (loaded.source.hash === this.snapshot.source.hash && !this.lastError) return;
      const previous = this.snapshot;
      this.snapshot = { ...loaded, config: this.transform(loaded.config) };
      this.lastError = null;
      this.reloads++;
      log.info(`config reloaded from ${basename(path)} (${previous.source.hash} → ${loaded.source.hash})`);
      for (const listener of this.listeners) listener(this.snapshot, previous);
    } catch (e) {
      const problems = e instanceof ConfigError ? e.problems : [(e as Error).message];
      const hash = e instanceof ConfigError ? e.hash : null;
      if (hash !== null && this.lastError?.hash === hash) return;
      this.lastError = { message: `${basename(path)}: ${problems.join("; ")}`, problems, at: Date.now() / 1000, hash };
      log.error(`config not reloaded, keeping ${this.snapshot.source.hash}: ${this.lastError.message}`);
      for (const listener of this.errorListeners) listener(this.lastError);
    }
  }

  /** Watches the file's directory, so editors that save by replacing the file are seen too. */
  watch(debounceMs = 150): void {
    const path = this.snapshot.source.path;
    if (!path || this.watcher) return;
    const name = basename(path);
    this.watcher = watch(dirname(path), (_event, file) => {
      if (file !== null && file !== name) return;
      if (this.debounce) clearTimeout(this.debounce);
      this.debounce = setTimeout(() => void this.reload(), debounceMs);
    });
    // The folder itself can vanish (an unmounted volume, a deleted checkout): keep the last good config.
    this.watcher.on("error", (e) => log.error(`config watch on ${dirname(path)} stopped (${e.message}); restart herd to watch again`));
  }

  close(): void {
    this.watcher?.close();
    this.watcher = null;
    if (this.debounce) clearTimeout(this.debounce);
  }
}
