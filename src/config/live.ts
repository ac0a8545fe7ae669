// The running config: an immutable snapshot swapped atomically when the file
// changes. Requests keep the snapshot they started with; a bad edit keeps the
// last good one and records why, where operators look (/fleet/status).
import { type FSWatcher, watch } from "node:fs";
import { basename, dirname } from "node:path";
import { log } from "../log.ts";
import { ConfigError, type ConfigSnapshot, defaultSnapshot, loadConfig, type LoadOptions } from "./load.ts";
import { withoutValue } from "./problems.ts";
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
  /** One per folder that holds a file of the config (the main file and its imports), by folder. */
  private watchers = new Map<string, FSWatcher>();
  private watching = false;
  private debounceMs = 150;
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
      this.watchFiles();
      for (const listener of this.listeners) listener(this.snapshot, previous);
    } catch (e) {
      const problems = e instanceof ConfigError ? e.problems.map(withoutValue) : [(e as Error).message];
      const hash = e instanceof ConfigError ? e.hash : null;
      if (hash !== null && this.lastError?.hash === hash) return;
      this.lastError = { message: `${basename(path)}: ${problems.join("; ")}`, problems, at: Date.now() / 1000, hash };
      log.error(`config not reloaded, keeping ${this.snapshot.source.hash}: ${this.lastError.message}`);
      for (const listener of this.errorListeners) listener(this.lastError);
    }
  }

  /**
   * Watches the folders of the file and of every file it imports (the set is renewed on each reload), so an edit
   * to an imported `nodes.ts` reloads too, and editors that save by replacing a file are seen.
   */
  watch(debounceMs = 150): void {
    if (!this.snapshot.source.path || this.watching) return;
    this.watching = true;
    this.debounceMs = debounceMs;
    this.watchFiles();
  }

  private watchFiles(): void {
    if (!this.watching) return;
    const dirs = new Set(this.snapshot.source.files.map((f) => dirname(f)));
    for (const [dir, watcher] of this.watchers) {
      if (!dirs.has(dir)) {
        watcher.close();
        this.watchers.delete(dir);
      }
    }
    for (const dir of dirs) {
      if (this.watchers.has(dir)) continue;
      // The names are read at each event, so a reload that imports another file of a watched folder is seen.
      const watcher = watch(dir, (_event, file) => {
        if (file !== null && !this.folderNames(dir).has(file)) return;
        if (this.debounce) clearTimeout(this.debounce);
        this.debounce = setTimeout(() => void this.reload(), this.debounceMs);
      });
      // The folder itself can vanish (an unmounted volume, a deleted checkout): keep the last good config.
      watcher.on("error", (e) => log.error(`config watch on ${dir} stopped (${e.message}); restart herd to watch again`));
      this.watchers.set(dir, watcher);
    }
  }

  private folderNames(dir: string): Set<string> {
    return new Set(this.snapshot.source.files.filter((f) => dirname(f) === dir).map((f) => basename(f)));
  }

  close(): void {
    for (const watcher of this.watchers.values()) watcher.close();
    this.watchers.clear();
    this.watching = false;
    if (this.debounce) clearTimeout(this.debounce);
  }
}
