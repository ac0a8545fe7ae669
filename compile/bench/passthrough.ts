// The floors under any router built on Bun, each in its own process as herd runs in its own:
// - "bytes": a pass-through proxy with no logic at all (Bun.serve in, herd's own HTTP client out, the node's
//   body piped back as it comes), so the overhead table can say how much of herd's cost is herd's own;
// - "json": the least a router on herd's stack must do — Elysia, the request's JSON parsed and written again for
//   the node, each line of the answer parsed and written again for the client — so the table can say how much
//   of herd's cost is its stack's and how much its own request path's.
import { Elysia } from "elysia";
import { postJson } from "../../src/backends/http1.ts";
import { readCapped } from "../../src/core/capped-body.ts";

export type Floor = "bytes" | "json";

export interface Passthrough {
  url: string;
  pid: number;
  stop(): Promise<void>;
}

export async function startPassthrough(upstream: string, floor: Floor = "bytes"): Promise<Passthrough> {
  const proc = Bun.spawn([process.execPath, import.meta.path, upstream, floor], { stdout: "pipe", stderr: "inherit" });
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

type Answer = Awaited<ReturnType<typeof postJson>>;

/** The node's body as a stream, each chunk through `map` (the bytes as they are, or its lines parsed and written again). */
function relayed(answer: Answer, map: (chunk: Uint8Array) => Uint8Array): ReadableStream<Uint8Array> {
  return new ReadableStream<Uint8Array>({
    async pull(c) {
      const { done, value } = await answer.body.read();
      if (done) c.close();
      else c.enqueue(map(value!));
    },
    cancel: () => answer.body.cancel(),
  });
}

const utf8 = new TextEncoder();
const text = new TextDecoder();

/** NDJSON lines parsed and written again; a line cut between two chunks is kept for the next. */
function lineByLine(): (chunk: Uint8Array) => Uint8Array {
  let partial = "";
  return (chunk) => {
    const lines = (partial + text.decode(chunk, { stream: true })).split("\n");
    partial = lines.pop()!;
    return utf8.encode(lines.map((line) => (line ? `${JSON.stringify(JSON.parse(line))}\n` : "")).join(""));
  };
}

if (import.meta.main) {
  const [upstream, floor] = process.argv.slice(2) as [string, Floor];
  const announce = (port: number | undefined) => console.log(`http://127.0.0.1:${port}`);
  if (floor === "json") {
    new Elysia()
      .post(
        "/*",
        async ({ request }) => {
          const body = JSON.parse(await request.text());
          const answer = await postJson(new URL(new URL(request.url).pathname, upstream), JSON.stringify(body), request.signal);
          const headers = { "content-type": answer.contentType ?? "application/json", "X-Fleet-Node": "bench" };
          if (answer.contentType?.startsWith("application/x-ndjson")) return new Response(relayed(answer, lineByLine()), { status: answer.status, headers });
          return new Response(JSON.stringify(JSON.parse(new TextDecoder().decode(await readCapped(answer.body, { bytes: 64 * 2 ** 20, setting: "the floor's cap" })))), { status: answer.status, headers });
        },
        { parse: "none" },
      )
      .listen({ hostname: "127.0.0.1", port: 0, idleTimeout: 0 }, (server) => announce(server.port));
  } else {
    const server = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      idleTimeout: 0,
      async fetch(req) {
        const answer = await postJson(new URL(new URL(req.url).pathname, upstream), await req.text(), req.signal);
        return new Response(relayed(answer, (chunk) => chunk), { status: answer.status, headers: { "content-type": answer.contentType ?? "application/json" } });
      },
    });
    announce(server.port);
  }
}
