// The requests a node's own service answers, typed as a chat request is (core/request.ts), and its answers: an image
// to generate, audio to transcribe, texts a native embedding server embeds. Each surface decodes its
// wire into one of these once; each backend renders it to its node's wire.
import type { RequestBase } from "./request.ts";

/** An image to generate (POST /api/generate-image, /v1/images/generations). */
export interface ImageRequest extends RequestBase {
  kind: "image";
  model: string;
  prompt: string;
  width: number;
  height: number;
  /** Left out: the model's configured default, or the image CLI's own. */
  steps?: number;
  seed?: number;
  quantize?: 3 | 4 | 5 | 6 | 8;
  guidance?: number;
  /** "" for none. */
  negativePrompt: string;
  /** How the client takes the image: its PNG bytes, or OpenAI's JSON with the PNG in base64. */
  response: "png" | "b64_json";
}

/** A generated image, as a node gives it. */
export interface GeneratedImage {
  png: Uint8Array;
  /** How long the generation took on the node, in ms. */
  generationMs: number;
}

/** Audio to transcribe (POST /api/transcribe). */
export interface TranscriptionRequest extends RequestBase {
  kind: "transcription";
  /** null: any model, on whichever node is least busy. */
  model: string | null;
  audio: { bytes: Uint8Array; name: string; type: string };
  language: string | null;
}

/** Seed 000's answer to POST /api/transcribe. */
export interface Transcript {
  text: string;
  language: string;
  chunks: { text: string; start: number; end: number; chunk_index: number; language: string }[];
}

export interface Transcribed {
  transcript: Transcript;
  /** How long the transcription took on the node, in ms. */
  transcriptionMs: number;
}

/** Texts a node's native embedding server embeds (an embed request whose model is one of theirs). */
export interface NativeEmbedRequest extends RequestBase {
  kind: "embed";
  model: string;
  input: string | string[];
  /** The vectors' length, when the client asked for one. */
  dimensions?: number;
  /** /api/embeddings: one `embedding` in the answer rather than Ollama's `embeddings`. */
  legacy: boolean;
}

/** A request for a node's own service, of any kind. */
export type MediaRequest = ImageRequest | TranscriptionRequest | NativeEmbedRequest;
