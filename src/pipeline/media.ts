// An image or a transcript, planned by its backend (which nodes offer the model, least busy first)
// and run through the pipeline of node services (service.ts): the surface decodes the request and
// says how to write the answer, and reaches no further.
import { imageJob } from "../backends/image.ts";
import { transcriptionJob } from "../backends/transcription.ts";
import type { GeneratedImage, ImageRequest, Transcribed, TranscriptionRequest } from "../core/media-request.ts";
import type { RouteMeta } from "./admit.ts";
import type { Pipeline } from "./route.ts";
import { runService, type ServiceReply } from "./service.ts";

export function generateImage(rt: Pipeline, req: ImageRequest, meta: RouteMeta, reply: ServiceReply<GeneratedImage>): Promise<Response> {
  return runService(rt, req, meta, () => imageJob(rt.registry, rt.queues, rt.live.config, req), reply);
}

export function transcribe(rt: Pipeline, req: TranscriptionRequest, meta: RouteMeta, reply: ServiceReply<Transcribed>): Promise<Response> {
  return runService(rt, req, meta, () => transcriptionJob(rt.registry, rt.queues, rt.live.config, req), reply);
}
