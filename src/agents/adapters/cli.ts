// "Any CLI": a program herd knows nothing about gets the environment and the
// fleet's instructions (HERD_INSTRUCTIONS), and is ready as soon as it runs.
import { type AgentAdapter, INSTRUCTIONS } from "./adapter.ts";

export const cli: AgentAdapter = {
  // Its own hook, if any, is told nothing of turns.
  turnInProgress: () => null,
  endsTurn: () => true,
  prepare: ({ argv, env }) => ({ argv, env: { ...env, HERD_INSTRUCTIONS: INSTRUCTIONS } }),
  ready: () => true,
  lastAnswer: () => null,
  // A program herd knows nothing about: its screen says nothing herd can read.
  dialog: () => null,
};
