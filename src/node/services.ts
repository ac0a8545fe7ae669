// The services a node agent runs beside Ollama, from its config entry: an image service and a
// transcription service (each a small HTTP listener the router calls), and checks of the native
// embedding servers the node declares. They follow config reloads; report() is what the
// heartbeat says about them.
import type { Server } from "bun";
import type { LiveConfig } from "../config/live.ts";
import type { NodeEntry } from "../config/schema.ts";
import type { Heartbeat } from "../fleet/heartbeat.ts";
import { bearerToken, sameSecret } from "../config/credentials/tokens.ts";
import { log } from "../log.ts";
import { deadline, installed } from "./services-cli.ts";
import { type EmbeddingReport, embeddingReport } from "./services-embedding.ts";
import { imageCommand, imageService } from "./services-images.ts";
import { transcriptionService } from "./services-transcription.ts";

export type ServicesReport = Pick<Heartbeat, "image_models" | "image_port" | "transcription_models" | "transcription_port"> & EmbeddingReport;

export interface NodeServices {
  report(): Promise<ServicesReport>;
  stop(): void;
}

/** `credential`: the node's credential; when there is one, only a caller presenting it (the router) may run a job. */
export function startServices(nodeId: string, live: LiveConfig, credential: () => string | null): NodeServices {
  const entry = (): NodeEntry | undefined => live.config.nodes.find((n) => n.id === nodeId);
  const within = (timeoutMs: () => number) => (signal: AbortSignal) => deadline(signal, timeoutMs());
  const guard = onlyWith(credential);
  const images = listener(nodeId, "image", guard(imageService(() => entry()?.images?.models ?? [], within(() => live.config.timeouts.imageMs))));
  const transcription = listener(nodeId, "transcription", guard(transcriptionService(() => entry()?.transcription, within(() => live.config.timeouts.transcriptionMs))));
  const missing = new Set<string>();
  // A CLI that is not installed is not offered; said once per command, and again once it is back.
  const present = (command: string[], what: string) => {
    const key = command.join(" ");
    const ok = installed(command);
    if (!ok && !missing.has(key)) log.warn(`node ${nodeId}: ${command[0]} not found, so ${what} is not offered; install it or fix its command in the config`);
    if (ok && missing.delete(key)) log.info(`node ${nodeId}: ${command[0]} found; ${what} is offered again`);
    if (!ok) missing.add(key);
    return ok;
  };
  const sync = () => {
    images.listen(entry()?.images);
    transcription.listen(entry()?.transcription);
  };
  sync();
  const unsubscribe = live.onChange(sync);

  return {
    async report() {
      const { images: imageSection, transcription: asr, embedding } = entry() ?? {};
      const offered = imageSection && images.port() !== null ? imageSection.models.filter((m) => present(imageCommand(m), `image model ${m.name}`)) : [];
      const transcribes = asr && transcription.port() !== null && present(asr.command, "transcription");
      return {
        image_models: offered.length ? offered.map((m) => ({ name: m.name, backend: m.backend })) : null,
        image_port: offered.length ? images.port() : null,
        transcription_models: transcribes ? asr.models.map((m) => ({ name: m.name })) : null,
        transcription_port: transcribes ? transcription.port() : null,
        ...(await embeddingReport(embedding, live.config.timeouts.connectMs)),
      };
    },
    stop() {
      unsubscribe();
      images.close();
      transcription.close();
    },
  };
}

// A job runs a CLI on this Mac and sees a prompt or a recording: with a node credential configured,
// a caller without it is refused before anything runs.
function onlyWith(credential: () => string | null) {
  return (serve: (request: Request) => Promise<Response>) => async (request: Request): Promise<Response> => {
    const expected = credential();
    const given = bearerToken(request);
    if (expected !== null && (given === null || !sameSecret(given, expected))) {
      return Response.json({ error: "this node's services need the node credential (auth.nodeToken or nodes[].token)" }, { status: 401 });
    }
    return serve(request);
  };
}

/** One service's HTTP listener: (re)started on the section's host and port, stopped when the section goes. */
function listener(nodeId: string, what: string, fetch: (request: Request) => Promise<Response>) {
  let server: Server<undefined> | null = null;
  let at = "";
  const close = () => {
    void server?.stop(true);
    server = null;
    at = "";
  };
  return {
    /** The port it listens on (the real one when the config says 0), or null when it does not. */
    port: () => server?.port ?? null,
    listen(section: { host: string; port: number } | undefined) {
      const want = section ? `${section.host}:${section.port}` : "";
      if (want === at) return;
      close();
      if (!section) return;
      at = want;
      try {
        // No idle timeout: a generation can take minutes before the first byte; the router's deadline bounds it.
        server = Bun.serve({ hostname: section.host, port: section.port, idleTimeout: 0, fetch });
        log.info(`node ${nodeId}: ${what} service on http://${section.host}:${server.port}`);
      } catch (e) {
        log.error(`node ${nodeId}: cannot start the ${what} service on ${want} (${(e as Error).message}); pick another port in the config`);
      }
    },
    close,
  };
}
