// Numbered schema migrations, applied in order, each once, inside a transaction.
// Never edit a shipped migration: add the next number.
export const migrations: { version: number; name: string; sql: string }[] = [
  {
    version: 1,
    name: "config and node history",
    sql: `
      CREATE TABLE config_events (
        id INTEGER PRIMARY KEY,
        at REAL NOT NULL,
        path TEXT,
        hash TEXT,
        ok INTEGER NOT NULL,
        message TEXT
      );
      CREATE TABLE node_events (
        id INTEGER PRIMARY KEY,
        at REAL NOT NULL,
        node_id TEXT NOT NULL,
        status TEXT NOT NULL,
        reason TEXT
      );
      CREATE INDEX node_events_node ON node_events (node_id, at);
    `,
  },
  {
    version: 2,
    name: "request traces",
    sql: `
      CREATE TABLE traces (
        request_id TEXT PRIMARY KEY,
        timestamp REAL NOT NULL,
        model TEXT NOT NULL,
        original_model TEXT NOT NULL,
        node_id TEXT,
        backend TEXT,
        kind TEXT NOT NULL,
        original_format TEXT NOT NULL,
        stream INTEGER NOT NULL,
        status TEXT NOT NULL,
        score REAL,
        scores_breakdown TEXT,
        latency_ms REAL,
        time_to_first_token_ms REAL,
        queue_wait_ms REAL,
        prompt_tokens INTEGER,
        completion_tokens INTEGER,
        retry_count INTEGER NOT NULL DEFAULT 0,
        fallback_used INTEGER NOT NULL DEFAULT 0,
        excluded_nodes TEXT,
        client_ip TEXT,
        error_message TEXT,
        tags TEXT
      );
      CREATE INDEX traces_time ON traces (timestamp);
      CREATE INDEX traces_model_time ON traces (model, timestamp);
      CREATE TABLE trace_tags (
        request_id TEXT NOT NULL REFERENCES traces (request_id) ON DELETE CASCADE,
        tag TEXT NOT NULL,
        timestamp REAL NOT NULL
      );
      CREATE INDEX trace_tags_tag_time ON trace_tags (tag, timestamp);
    `,
  },
  {
    version: 3,
    name: "trace tags by time",
    // The dashboard's per-tag stats read a time window across all tags; (tag, timestamp) cannot serve that range.
    sql: "CREATE INDEX trace_tags_time ON trace_tags (timestamp);",
  },
  {
    version: 4,
    name: "pins",
    // Pins set through the API; the config's pins are read from the config, never stored.
    sql: `
      CREATE TABLE pins (
        node_id TEXT NOT NULL,
        model TEXT NOT NULL,
        pinned_at REAL NOT NULL,
        PRIMARY KEY (node_id, model)
      );
    `,
  },
  {
    version: 5,
    name: "why a model was chosen",
    // How a requested id became the model that ran (modelMap, a local name, tier auto-routing).
    sql: "ALTER TABLE traces ADD COLUMN resolution TEXT;",
  },
  {
    version: 6,
    name: "what herd changed about a request",
    // e.g. old tool results cleared to fit the context, num_ctx stripped, a thinking budget raised.
    sql: "ALTER TABLE traces ADD COLUMN adjustments TEXT;",
  },
  {
    version: 7,
    name: "benchmark runs",
    // Seed 000's fields; the per-model, per-node and utilization details are JSON text, as the seed sends them.
    sql: `
      CREATE TABLE benchmark_runs (
        run_id TEXT PRIMARY KEY,
        timestamp REAL NOT NULL,
        duration_s REAL NOT NULL,
        total_requests INTEGER NOT NULL,
        total_failures INTEGER NOT NULL,
        total_prompt_tokens INTEGER NOT NULL,
        total_completion_tokens INTEGER NOT NULL,
        requests_per_sec REAL NOT NULL,
        tokens_per_sec REAL NOT NULL,
        latency_p50_ms REAL,
        latency_p95_ms REAL,
        latency_p99_ms REAL,
        ttft_p50_ms REAL,
        ttft_p95_ms REAL,
        ttft_p99_ms REAL,
        fleet_snapshot TEXT NOT NULL,
        per_model_results TEXT NOT NULL,
        per_node_results TEXT NOT NULL,
        peak_utilization TEXT NOT NULL
      );
      CREATE INDEX benchmark_runs_time ON benchmark_runs (timestamp);
    `,
  },
  {
    version: 8,
    name: "daily roll-ups of pruned traces",
    // Traces past store.traces' retention are summed here per day before they are deleted, so the dashboard's
    // totals, per-model and per-tag history survive pruning. Sums and counts, so averages stay exact.
    sql: `
      CREATE TABLE trace_days (
        day TEXT NOT NULL,
        node_id TEXT NOT NULL,
        model TEXT NOT NULL,
        requests INTEGER NOT NULL,
        completed INTEGER NOT NULL,
        prompt_tokens INTEGER NOT NULL,
        completion_tokens INTEGER NOT NULL,
        latency_sum REAL NOT NULL,
        latency_count INTEGER NOT NULL,
        last_used REAL NOT NULL,
        PRIMARY KEY (day, node_id, model)
      );
      CREATE TABLE tag_days (
        day TEXT NOT NULL,
        tag TEXT NOT NULL,
        requests INTEGER NOT NULL,
        failed INTEGER NOT NULL,
        prompt_tokens INTEGER NOT NULL,
        completion_tokens INTEGER NOT NULL,
        latency_sum REAL NOT NULL,
        latency_count INTEGER NOT NULL,
        ttft_sum REAL NOT NULL,
        ttft_count INTEGER NOT NULL,
        PRIMARY KEY (day, tag)
      );
    `,
  },
  {
    version: 9,
    name: "learned node speeds",
    // What herd learned of each node:model from its answers (fleet/speeds.ts), so a restart does not forget it.
    sql: `
      CREATE TABLE node_speeds (
        node_id TEXT NOT NULL,
        model TEXT NOT NULL,
        size_bytes REAL NOT NULL,
        decode_tps REAL,
        decode_samples INTEGER NOT NULL,
        prefill_tps REAL,
        prefill_samples INTEGER NOT NULL,
        load_ms REAL,
        load_samples INTEGER NOT NULL,
        updated_at REAL NOT NULL,
        PRIMARY KEY (node_id, model)
      );
    `,
  },
  {
    version: 10,
    name: "agent fleet roster",
    // The agent fleet's live workers (agents/sessions.ts), so a router that crashed can find and stop them
    // when it starts again, on whatever port: their tmux socket, pane pid and the router that spawned them.
    sql: `
      CREATE TABLE agent_workers (
        session_id TEXT PRIMARY KEY,
        profile TEXT NOT NULL,
        role TEXT NOT NULL,
        tmux_socket TEXT NOT NULL,
        pane_id TEXT NOT NULL,
        pane_pid INTEGER NOT NULL,
        router_pid INTEGER NOT NULL,
        started_at REAL NOT NULL
      );
    `,
  },
  {
    version: 11,
    name: "learned node slots",
    // The parallel slots herd learned of nodes that declare none (fleet/slots.ts), so a restart does not forget them.
    sql: `
      CREATE TABLE node_slots (
        node_id TEXT PRIMARY KEY,
        slots INTEGER NOT NULL
      );
    `,
  },
  {
    version: 12,
    name: "the finish-time prediction",
    // Under routing.strategy "finish-time" the expected finish in ms and its parts; score keeps seed 000's meaning.
    sql: `
      ALTER TABLE traces ADD COLUMN predicted_ms REAL;
      ALTER TABLE traces ADD COLUMN prediction_breakdown TEXT;
    `,
  },
];
