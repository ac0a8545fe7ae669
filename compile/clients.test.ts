// The clients' versions live in package.json alone: each pinned exactly, installed as pinned, and
// docs/clients.md's table written from them (npm run clients:update), not by hand.
import { expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { CLIENTS, documentedTable, pinnedVersions, versionTable } from "./clients.ts";

test("every client is pinned to one exact version, and that version is what is installed", () => {
  for (const [name, version] of Object.entries(pinnedVersions())) {
    expect({ name, version }).toEqual({ name, version: expect.stringMatching(/^\d+\.\d+\.\d+$/) });
    const installed = JSON.parse(readFileSync(join(import.meta.dir, "../node_modules", name, "package.json"), "utf8")).version;
    expect({ name, installed }).toEqual({ name, installed: version });
  }
  expect(Object.keys(CLIENTS).length).toBeGreaterThanOrEqual(12);
});

test("docs/clients.md lists the versions package.json pins", () => {
  expect(documentedTable()).toBe(versionTable());
});
