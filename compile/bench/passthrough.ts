// The floor under any router built on Bun: a pass-through proxy with no logic
// at all (Bun.serve in, fetch out, the node's body piped back as it comes), so
// the overhead table can say how much of herd's cost is herd's own.
export interface Passthrough {
  url: string;
  stop(): Promise<void>;
}

/** Starts the proxy in its own process, as herd runs in its own. */
export async function startPassthrough(upstream: string): Promise<Passthrough> {
  const proc = Bun.spawn([process.execPath, import.meta.path, upstream], { stdout: "pipe", stderr: "inherit" });
  const reader = proc.stdout.getReader();
  const { value } = await reader.read();
  reader.releaseLock();
  return {
    url: new TextDecoder().decode(value).trim(),
    stop: async () => {
      proc.kill();
      await proc.exited;
    },
  };
}

if (import.meta.main) {
  const upstream = process.argv[2]!;
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    idleTimeout: 0,
    async fetch(req) {
      const res = await fetch(new URL(new URL(req.url).pathname, upstream), { method: req.method, headers: { "content-type": "application/json" }, body: await req.text() });
      return new Response(res.body, { status: res.status, headers: { "content-type": res.headers.get("content-type") ?? "application/json" } });
    },
  });
  console.log(`http://127.0.0.1:${server.port}`);
}
