// The thread that counts tokens with the BPE tokenizer (see tokens.ts): a prompt of megabytes takes the tokenizer
// hundreds of milliseconds, which must not stall every other request on the router's event loop.
declare const self: Worker;

type Count = (text: string) => number;
let count: Promise<Count> | undefined;

self.onmessage = async ({ data }: MessageEvent<{ id: number; texts: string[] }>) => {
  // Loaded on first use: parsing the vocabulary takes about half a second.
  count ??= import("gpt-tokenizer/encoding/cl100k_base").then(
    // Text that spells a special token (<|endoftext|>) is counted as text, not refused.
    (bpe): Count => (text) => bpe.countTokens(text, { disallowedSpecial: new Set() }),
  );
  try {
    const counter = await count;
    self.postMessage({ id: data.id, counts: data.texts.map(counter) });
  } catch (e) {
    self.postMessage({ id: data.id, error: (e as Error).message });
  }
};
