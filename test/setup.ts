// Preloaded before every test file (bunfig.toml): per-test cleanup, and the
// end-of-run sweep, so no router or agent started by a test outlives it.
import { afterAll, afterEach, beforeEach } from "bun:test";
import { cleanupFile, cleanupTest, killAllNow, testStarted } from "./helpers.ts";

beforeEach(testStarted);
afterEach(cleanupTest);
afterAll(cleanupFile);
process.on("exit", killAllNow);
