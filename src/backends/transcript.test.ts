// A transcript from what an ASR tool or a node gave: mlx-qwen3-asr's chunks, Whisper's segments, and answers not to be trusted.
import { expect, test } from "bun:test";
import { transcriptIn, transcriptOf } from "./transcript.ts";

test("mlx-qwen3-asr's result (its server's test_server.py mocks this one) keeps its chunks", () => {
  const result = { text: "Hello world", language: "English", chunks: [{ text: "Hello world", start: 0.0, end: 2.5, chunk_index: 0, language: "English" }] };
  expect(transcriptOf(result)).toEqual(result);
});

test("Whisper-style segments become chunks, each with its index and the transcript's language", () => {
  expect(transcriptOf({ text: " a b ", language: "German", segments: [{ text: " a", start: 0, end: 1 }, { text: "b ", start: 1, end: 2 }] })).toEqual({
    text: "a b",
    language: "German",
    chunks: [
      { text: "a", start: 0, end: 1, chunk_index: 0, language: "German" },
      { text: "b", start: 1, end: 2, chunk_index: 1, language: "German" },
    ],
  });
});

test("fields of the wrong type are left out or given herd's defaults; no text is no transcript", () => {
  expect(transcriptOf({ text: "x", language: 5, chunks: [null, 3, { text: 7 }, { text: "y", start: "0", end: Infinity, language: "" }] })).toEqual({
    text: "x",
    language: "unknown",
    chunks: [{ text: "y", start: 0, end: 0, chunk_index: 0, language: "unknown" }],
  });
  for (const raw of [null, "text", [], { text: 5 }, { language: "English" }]) expect(transcriptOf(raw)).toBeNull();
  expect(transcriptIn(new TextEncoder().encode("{not json"))).toBeNull();
});
