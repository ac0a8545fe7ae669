// "Any CLI": a program herd knows nothing about gets the environment and the
// fleet's instructions (HERD_INSTRUCTIONS), and is ready as soon as it runs, or
// once its screen shows what its profile says it shows when ready (readyWhen).
import { type AgentAdapter, INSTRUCTIONS } from "./adapter.ts";

export const cli: AgentAdapter = {
  // It reads no model's instructions, and how to interrupt it is its own affair.
  frame: (content) => content,
  interrupt: null,
  phase: () => "idle",
  // Its own hook, if any, is told nothing of turns.
  turnInProgress: () => null,
  endsTurn: () => true,
  prepare: ({ argv, env }) => ({ argv, env: { ...env, HERD_INSTRUCTIONS: INSTRUCTIONS } }),
  ready: () => true,
  lastAnswer: () => null,
  // A program herd knows nothing about: its screen says nothing herd can read.
  dialog: () => null,
  turnFailure: () => null,
};

/** A cli program ready once its screen matches `screen` (agents.profiles.<name>.ready.screen, checked by the config's schema). */
export const readyWhen = (screen: string): AgentAdapter => {
  const pattern = new RegExp(screen, "m");
  return { ...cli, ready: (shown) => pattern.test(shown) };
};
