// Speech-to-text through a real router and a real node agent that runs a stand-in for the Qwen3-ASR
// CLI (test/fixtures/media/mlx-qwen3-asr.ts): a WAV made here is uploaded as multipart, and the
// answer is seed 000's JSON with chunks. Tests share the fleet, in order.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { atRouter, printed, runLine } from "./doc-commands.ts";
import { cleanupFile, eventually, fleetSet, getJson, refusedSet, tmpDir } from "./helpers.ts";
import { type MediaFleet, standIn, startMediaFleet } from "./fixtures/media/fleet.ts";
import { wav } from "./fixtures/media/wav.ts";

let fleet: MediaFleet;

function upload(fields: Record<string, string | Blob>, filename = "recording.wav") {
  const form = new FormData();
  for (const [k, v] of Object.entries(fields)) {
    if (v instanceof Blob) form.set(k, v, filename);
    else form.set(k, v);
  }
  return fetch(`${fleet.url}/api/transcribe`, { method: "POST", body: form });
}

afterAll(async () => {
  await fleet?.stop();
  await cleanupFile();
});

beforeAll(async () => {
  fleet = await startMediaFleet({
    section: `transcription: { port: 0, command: ${JSON.stringify(standIn("mlx-qwen3-asr.ts"))}, models: [{ name: "qwen3-asr", model: "Qwen/Qwen3-ASR-0.6B" }, { name: "qwen3-asr-huge", model: "Qwen/Qwen3-ASR-9B" }] }`,
  });
});

describe("POST /api/transcribe", () => {
  test("a model no node offers is a 404", async () => {
    const res = await upload({ audio: new Blob([wav(1)]), model: "whisper-large" });
    expect(res.status).toBe(404);
    expect(((await res.json()) as any).error).toContain('transcription model "whisper-large" is not available on any node');
  });

  test("a WAV comes back as seed 000's JSON: text, language and chunks, with the seed's headers", async () => {
    const res = await eventually(async () => {
      const r = await upload({ audio: new Blob([wav(2.5)], { type: "audio/wav" }) });
      return r.status === 200 && r;
    }, 5000, "a transcription");
    expect(res.headers.get("x-fleet-node")).toBe("studio");
    expect(res.headers.get("x-fleet-model")).toBe("qwen3-asr");
    // Asked for no model, it asked for the one herd picked: that model is what was asked for and served, no fallback.
    expect([res.headers.get("x-fleet-requested-model"), res.headers.get("x-fleet-served-model"), res.headers.get("x-fleet-fallback")]).toEqual(["qwen3-asr", "qwen3-asr", "false"]);
    expect(res.headers.get("x-fleet-backend")).toBe("transcription");
    expect(Number(res.headers.get("x-transcription-time"))).toBeGreaterThan(0);
    expect(await res.json()).toEqual({
      text: "Second 1 of 16000 Hz audio. Second 2 of 16000 Hz audio. Second 3 of 16000 Hz audio.",
      language: "English",
      chunks: [
        { text: "Second 1 of 16000 Hz audio.", start: 0, end: 1, chunk_index: 0, language: "English" },
        { text: "Second 2 of 16000 Hz audio.", start: 1, end: 2, chunk_index: 1, language: "English" },
        { text: "Second 3 of 16000 Hz audio.", start: 2, end: 2.5, chunk_index: 2, language: "English" },
      ],
    });
  });

  test("docs/media.md's curl line, run as printed beside a recording.wav: the transcript", async () => {
    const dir = tmpDir();
    writeFileSync(join(dir, "recording.wav"), wav(1));
    const r = await runLine(atRouter(printed("docs/media.md", /\/api\/transcribe/), fleet.url), { cwd: dir });
    expect([r.code, JSON.parse(r.stdout).text]).toEqual([0, "Second 1 of 16000 Hz audio."]);
  });

  test("model and language are passed to the CLI", async () => {
    const res = await upload({ audio: new Blob([wav(1, 8000)]), model: "qwen3-asr", language: "German" });
    expect(res.status).toBe(200);
    const body = (await res.json()) as any;
    expect(body.language).toBe("German");
    expect(body.chunks).toEqual([{ text: "Second 1 of 8000 Hz audio.", start: 0, end: 1, chunk_index: 0, language: "German" }]);
  });

  test("a model's configured id is what the CLI gets: one it cannot load is a 502", async () => {
    const res = await upload({ audio: new Blob([wav(1)]), model: "qwen3-asr-huge" });
    expect(res.status).toBe(502);
    expect(((await res.json()) as any).error).toContain("cannot load model 'Qwen/Qwen3-ASR-9B'");
  });

  test("audio the CLI cannot decode is a 502 that says why", async () => {
    const res = await upload({ audio: new Blob(["this is not audio"]) }, "notes.txt");
    expect(res.status).toBe(502);
    const { error } = (await res.json()) as any;
    expect(error).toContain("transcription failed on studio");
    expect(error).toContain("exited with code 1");
    expect(error).toContain("not a RIFF/WAVE file");
  });

  test("no audio, an empty file, or not multipart is a 400 that says what to send", async () => {
    const noAudio = await upload({ model: "qwen3-asr" });
    expect(noAudio.status).toBe(400);
    expect(((await noAudio.json()) as any).error).toContain("audio: required");
    const empty = await upload({ audio: new Blob([]) });
    expect(empty.status).toBe(400);
    expect(((await empty.json()) as any).error).toContain("audio: the file is empty");
    const json = await fetch(`${fleet.url}/api/transcribe`, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" });
    expect(json.status).toBe(400);
    expect(((await json.json()) as any).error).toContain('send multipart/form-data with the audio file in the field "audio"');
    // Refused before routing, with the X-Fleet-* set all the same: no node, the model asked for if named.
    expect([fleetSet(noAudio), fleetSet(empty), fleetSet(json)]).toEqual([refusedSet("qwen3-asr"), refusedSet("none"), refusedSet("none")]);
  });

  test("the fleet's transcription models are not pullable through Ollama", async () => {
    const res = await fetch(`${fleet.url}/api/pull`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ name: "qwen3-asr" }) });
    expect(res.status).toBe(400);
    expect(((await res.json()) as any).error).toContain("not an Ollama model; install it with:");
  });

  test("a transcription takes a slot on its node:model queue like any request: /fleet/status counts it; /fleet/queue, Ollama's and MLX's only, does not list it", async () => {
    const queueOf = async () => (await getJson(`${fleet.url}/fleet/status`)).queues["studio:qwen3-asr"];
    const before = (await queueOf())?.completed ?? 0;
    expect((await upload({ audio: new Blob([wav(1)]), model: "qwen3-asr" })).status).toBe(200);
    expect(await queueOf()).toMatchObject({ node_id: "studio", model: "qwen3-asr", in_flight: 0, pending: 0, completed: before + 1 });
    expect(Object.keys((await getJson(`${fleet.url}/fleet/queue`)).queues)).not.toContain("studio:qwen3-asr");
  });

  test("features.transcription: false is a 503; a node that stops offering it leaves a 404", async () => {
    fleet.writeConfig("features: { transcription: false },");
    const disabled = await eventually(async () => {
      const res = await upload({ audio: new Blob([wav(1)]) });
      return res.status === 503 && res;
    }, 5000, "a 503");
    expect(((await disabled.json()) as any).error).toContain("transcription is disabled on this router (features.transcription)");
    // Back on, with the node's transcription section gone: its agent stops the service and says so.
    fleet.writeConfig("", "");
    const gone = await eventually(async () => {
      const res = await upload({ audio: new Blob([wav(1)]) });
      return res.status === 404 && res;
    }, 5000, "a 404");
    expect(((await gone.json()) as any).error).toContain("no speech-to-text models are available on any node");
    expect(gone.headers.get("x-fleet-requested-model")).toBe("none");
  });
});
