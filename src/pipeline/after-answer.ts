// What an answer teaches herd (its trace row; the node's speed and slots; the model's token counts) is taken once
// the answer is out: queued here and done together after the turn of the event loop that wrote the answer, so it
// adds nothing to any answer's latency, and runs as one pass over many answers when they come fast. The slot and
// the client's place are given back at once, not here: the next request must not wait for the bookkeeping.
import { log } from "../log.ts";

export class AfterAnswer {
  private work: (() => void)[] = [];
  private scheduled = false;

  later(work: () => void): void {
    this.work.push(work);
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => this.flush());
  }

  /** Does what is queued now: each turn's pass, and a stop's before the store closes. */
  flush(): void {
    this.scheduled = false;
    const work = this.work;
    this.work = [];
    for (const w of work) {
      try {
        w();
      } catch (e) {
        log.error(`an answer's bookkeeping failed: ${(e as Error).message}`);
      }
    }
  }
}
