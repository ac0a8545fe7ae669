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
];
