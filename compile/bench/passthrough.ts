// The floor under any router built on Bun: a pass-through proxy with no logic
// at all (Bun.serve in, herd's own HTTP client out, the node's body piped back
// as it comes), so the overhead table can say how much of herd's cost is herd's own.
import { postJson } from "../../src/backends/http1.ts";

export interface Passthrough {
  url: string;
  pid: number;
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
    pid: proc.pid,
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
      const answer = await postJson(new URL(new URL(req.url).pathname, upstream), await req.text(), req.signal);
      const body = new ReadableStream<Uint8Array>({
        async pull(c) {
          const { done, value } = await answer.body.read();
          if (done) c.close();
          else c.enqueue(value!);
        },
        cancel: () => answer.body.cancel(),
      });
      return new Response(body, { status: answer.status, headers: { "content-type": answer.contentType ?? "application/json" } });
    },
  });
  console.log(`http://127.0.0.1:${server.port}`);
}
