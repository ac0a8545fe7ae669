// What herd learns from the nodes' answers (speeds, slots) goes to the store in batches, off the request's way.

/** How often what was learned is saved: a crash loses at most this much of it. */
const SAVE_EVERY_MS = 2000;

/** Runs `save` (which writes what changed since its last run) every `everyMs`; stop() saves the rest. */
export function startSaver(save: () => void, everyMs = SAVE_EVERY_MS): { stop(): void } {
  const timer = setInterval(save, everyMs);
  return {
    stop() {
      clearInterval(timer);
      save();
    },
  };
}
