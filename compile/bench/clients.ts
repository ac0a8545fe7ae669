// Which HTTP client herd should call its nodes with: Bun's fetch, undici's
// Pool or herd's own (src/backends/http1.ts, Bun sockets on the event loop),
// each driving the same load straight at a simulated node, so the client's own
// cost is all that differs.
import { type Cell, loadMatrix, requestLabel } from "./matrix.ts";
import { ms } from "./stats.ts";

type Client = "fetch" | "undici" | "herd";

export function compareClients(simUrl: string): Promise<Cell<Client>[]> {
  return loadMatrix({ fetch: { url: simUrl, client: "fetch" }, undici: { url: simUrl, client: "undici" }, herd: { url: simUrl, client: "herd" } });
}

export function clientsMarkdown(cells: Cell<Client>[]): string {
  const cell = (s: Cell<Client>["by"][Client]) => `${ms(s.p50)} / ${ms(s.p99)} / ${s.rps.toFixed(0)}`;
  const rows = cells.map(({ stream, clients, by }) => `| ${stream ? "stream" : "whole"} | ${clients} | ${cell(by.fetch)} | ${cell(by.undici)} | ${cell(by.herd)} |`);
  return `### Upstream HTTP client

The client herd uses to call a node, measured alone: ${requestLabel}, straight to the simulated node from the load-generator
process, with Bun's fetch, with undici's \`Pool\` (the npm package, one connection per client) and with herd's own HTTP/1.1
client (src/backends/http1.ts: a keep-alive pool of Bun sockets, no hand-off to an HTTP thread). p50 / p99 ms / req/s:

| body | clients | Bun fetch | undici Pool | herd's client |
|---|---|---|---|---|
${rows.join("\n")}`;
}
