// Which HTTP client herd should call its nodes with: Bun's fetch or undici's
// Pool, each driving the same load straight at a simulated node, so the
// client's own cost is all that differs.
import { type Cell, loadMatrix, requestLabel } from "./matrix.ts";
import { ms } from "./stats.ts";

export function compareClients(simUrl: string): Promise<Cell<"fetch" | "undici">[]> {
  return loadMatrix({ fetch: { url: simUrl, client: "fetch" }, undici: { url: simUrl, client: "undici" } });
}

export function clientsMarkdown(cells: Cell<"fetch" | "undici">[]): string {
  const rows = cells.map(
    ({ stream, clients, by: { fetch, undici } }) =>
      `| ${stream ? "stream" : "whole"} | ${clients} | ${ms(fetch.p50)} / ${ms(fetch.p99)} / ${fetch.rps.toFixed(0)} | ${ms(undici.p50)} / ${ms(undici.p99)} / ${undici.rps.toFixed(0)} |`,
  );
  return `### Upstream HTTP client

The client herd uses to call a node, measured alone: ${requestLabel}, straight to the simulated node from the load-generator
process, once with Bun's fetch and once with undici's \`Pool\` (the npm package, one connection per client). p50 / p99 ms / req/s:

| body | clients | Bun fetch | undici Pool |
|---|---|---|---|
${rows.join("\n")}`;
}
