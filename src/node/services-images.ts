// The node's image service: POST /api/generate-image runs mflux or DiffusionKit once, with the
// arguments those CLIs take, and answers with the PNG it wrote (X-Generation-Time: ms). The route
// and its body are those of Ollama Herd's image server (node/image_server.py of ollama-herd at
// 32cfc92), so the router asks both kinds of node alike.
import * as v from "valibot";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { isPng } from "../backends/image.ts";
import { type ImageJob, imageJobSchema } from "../fleet/image-models.ts";
import type { NodeEntry } from "../config/schema.ts";
import { formatIssues } from "../config/problems.ts";
import { jsonError } from "../core/wire-errors.ts";
import { type Deadline, inTempDir, OneAtATime, runCli } from "./services-cli.ts";

type ImageModel = NonNullable<NodeEntry["images"]>["models"][number];

const DEFAULT_COMMAND: Record<ImageModel["backend"], string[]> = { mflux: ["mflux-generate"], diffusionkit: ["diffusionkit-cli"] };

export function imageCommand(model: ImageModel): string[] {
  return model.command ?? DEFAULT_COMMAND[model.backend];
}

/** The command line for one image: mflux's flags, or DiffusionKit's (which has no quantisation). */
function imageArgs(model: ImageModel, job: ImageJob, output: string): string[] {
  const steps = job.steps ?? model.steps;
  const quantize = job.quantize ?? model.quantize;
  const optional = (flag: string, value: string | number | undefined) => (value === undefined || value === "" ? [] : [flag, String(value)]);
  const size = ["--width", String(job.width), "--height", String(job.height)];
  if (model.backend === "diffusionkit") {
    return [
      ...imageCommand(model),
      ...["--model-version", model.model ?? model.name, "--prompt", job.prompt, ...size],
      ...optional("--steps", steps),
      ...optional("--seed", job.seed),
      ...optional("--cfg", job.guidance),
      ...optional("--negative_prompt", job.negative_prompt),
      ...["--output-path", output],
    ];
  }
  return [
    ...imageCommand(model),
    ...["--model", model.model ?? model.name, "--prompt", job.prompt, ...size],
    ...optional("--steps", steps),
    ...optional("--seed", job.seed),
    ...optional("--quantize", quantize),
    ...optional("--guidance", job.guidance),
    ...optional("--negative-prompt", job.negative_prompt),
    ...["--output", output],
  ];
}

export function imageService(models: () => ImageModel[], newDeadline: (signal: AbortSignal) => Deadline) {
  const queue = new OneAtATime();
  return async (request: Request): Promise<Response> => {
    if (new URL(request.url).pathname !== "/api/generate-image" || request.method !== "POST") return jsonError(404, "the image service answers POST /api/generate-image");
    const d = newDeadline(request.signal);
    const parsed = v.safeParse(imageJobSchema, await request.json().catch(() => null));
    if (!parsed.success) return jsonError(400, formatIssues(parsed.issues, imageJobSchema).join("; "));
    const job = parsed.output;
    const model = models().find((m) => m.name === job.model);
    if (!model) return jsonError(404, `this node does not offer the image model "${job.model}"`);
    return queue.run(() =>
      inTempDir("herd-image-", async (dir) => {
        const started = performance.now();
        const output = join(dir, "image.png");
        const failure = await runCli(imageCommand(model).join(" "), imageArgs(model, job, output), d);
        if (failure) return jsonError(502, failure);
        const png = await readFile(output).catch(() => null);
        if (!png || !isPng(png)) return jsonError(502, `${imageCommand(model).join(" ")} exited 0 but wrote no PNG to its --output file`);
        return new Response(png, { headers: { "content-type": "image/png", "X-Generation-Time": String(Math.round(performance.now() - started)) } });
      }),
    );
  };
}
