// The OpenAI Responses API (what Codex speaks) through a real router process
// to simulated nodes, with the official openai SDK and raw SSE: items in and
// out, custom tools, the Codex rewrites, model resolution, and the event
// sequence checked event by event, down to a Codex turn from a fixture.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import OpenAI from "openai";
import { type SimNode, startSimOllama } from "../src/sim/index.ts";
import { eventually, getJson, startRouterProcess, tmpDir } from "./helpers.ts";

const PNG = "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";
const WEATHER: OpenAI.Responses.FunctionTool = { type: "function", name: "get_weather", description: "Current weather", strict: false, parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] } };
const EXEC: OpenAI.Responses.CustomTool = { type: "custom", name: "exec", description: "Run JavaScript; nested tools are on `tools`, e.g. `await tools.exec_command(...)`", format: { type: "grammar", syntax: "lark", definition: "start: /[\\s\\S]+/" } };
const EXEC_COMMAND: OpenAI.Responses.FunctionTool = { type: "function", name: "exec_command", description: "Runs a command in a PTY", strict: false, parameters: { type: "object", properties: { cmd: { type: "string" }, workdir: { type: "string" } }, required: ["cmd"] } };
const PATCH = "*** Begin Patch\n*** Add File: hello.txt\n+hello\n*** End Patch";
const APPLY_PATCH: OpenAI.Responses.FunctionTool = { type: "function", name: "apply_patch", description: "Edit files", strict: false, parameters: { type: "object", properties: { input: { type: "string", examples: [PATCH] } }, required: ["input"] } };

let url: string;
let output: () => string;
let client: OpenAI;
const sims: SimNode[] = [];

// One fleet for the file: a Mac with a coder, a thinker, a small model and a
// vision model loaded (a bigger coder only on disk), and one whose node dies mid-answer.
beforeAll(async () => {
  sims.push(
    await startSimOllama({
      id: "studio",
      models: ["qwen2.5-coder:7b", "qwen2.5-coder:32b", "qwen3:8b", "llama3.2:3b", "gemma3:4b"],
      loaded: ["qwen2.5-coder:7b", "qwen3:8b", "llama3.2:3b", "gemma3:4b"],
    }),
    await startSimOllama({ id: "flaky", models: ["llama3.1:8b"], loaded: ["llama3.1:8b"], faults: { dieAfterTokens: 3 } }),
  );
  const dir = tmpDir();
  const file = join(dir, "herd.config.ts");
  const nodes = sims.map((s) => JSON.stringify({ id: s.id, ollama: s.url }));
  writeFileSync(file, `export default { nodes: [${nodes.join(", ")}], heartbeat: { intervalMs: 30000, timeoutMs: 60000, offlineMs: 120000 } };\n`);
  const router = await startRouterProcess(["serve", "--config", file, "--port", "0", "--host", "127.0.0.1", "--data-dir", join(dir, "data")]);
  await eventually(async () => (await getJson(`${router.url}/fleet/status`)).nodes.every((n: any) => n.status === "online"), 3000, "all nodes online");
  url = router.url;
  output = router.output;
  client = new OpenAI({ baseURL: `${url}/v1`, apiKey: "x", maxRetries: 0 });
});
afterAll(async () => {
  await Promise.all(sims.map((s) => s.stop()));
});

const post = (body: unknown) => fetch(`${url}/v1/responses`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });

/** The SSE frames of a raw response: each is an `event:` line naming the `data:` line's type. */
async function frames(res: Response): Promise<any[]> {
  expect(res.headers.get("content-type")).toStartWith("text/event-stream");
  const text = await res.text();
  expect(text.endsWith("\n\n")).toBe(true);
  return text
    .slice(0, -2)
    .split("\n\n")
    .map((frame) => {
      const [event, data, ...rest] = frame.split("\n");
      expect(rest).toEqual([]);
      expect(event).toStartWith("event: ");
      expect(data).toStartWith("data: ");
      const json = JSON.parse(data!.slice(6));
      expect(event!.slice(7)).toBe(json.type);
      return json;
    });
}

/**
 * Checks what every Responses stream must hold (sequence numbers 0, 1, 2…; every
 * event's item_id is the item added at its output_index; deltas add up to the
 * text, arguments or input each .done and the item carry; the final response
 * lists exactly the finished items) and returns the stream's outline: event
 * names, a run of deltas once, item events with the item's type.
 */
function outline(events: any[]): string[] {
  const items = new Map<number, { id: string; text: string }>();
  const finished: any[] = [];
  const names: string[] = [];
  events.forEach((e, i) => {
    expect(e.sequence_number).toBe(i);
    if (e.type === "response.output_item.added") {
      expect(items.has(e.output_index)).toBe(false);
      items.set(e.output_index, { id: e.item.id, text: "" });
    } else if (e.item_id !== undefined) expect(items.get(e.output_index)?.id).toBe(e.item_id);
    const item = items.get(e.output_index);
    if (e.type.endsWith(".delta")) item!.text += e.delta;
    if (/(text|arguments|input)\.done$/.test(e.type)) expect(e.text ?? e.arguments ?? e.input).toBe(item!.text);
    if (e.type === "response.output_item.done") {
      expect(e.item.id).toBe(item!.id);
      expect(e.item.content?.[0].text ?? e.item.arguments ?? e.item.input).toBe(item!.text);
      finished.push(e.item);
    }
    const name = e.item ? `${e.type} ${e.item.type}` : e.type;
    if (!(name.endsWith(".delta") && names.at(-1) === name)) names.push(name);
  });
  expect(events.at(-1).response.output).toEqual(finished);
  return names;
}

const START = ["response.created", "response.in_progress"];
const REASONING = [
  "response.output_item.added reasoning",
  "response.content_part.added",
  "response.reasoning_text.delta",
  "response.reasoning_text.done",
  "response.content_part.done",
  "response.output_item.done reasoning",
];
const MESSAGE = [
  "response.output_item.added message",
  "response.content_part.added",
  "response.output_text.delta",
  "response.output_text.done",
  "response.content_part.done",
  "response.output_item.done message",
];
const FUNCTION_CALL = ["response.output_item.added function_call", "response.function_call_arguments.delta", "response.function_call_arguments.done", "response.output_item.done function_call"];
const CUSTOM_CALL = ["response.output_item.added custom_tool_call", "response.custom_tool_call_input.delta", "response.custom_tool_call_input.done", "response.output_item.done custom_tool_call"];

describe("requests and answers", () => {
  test("a plain string input: one Response object with the message, usage, and what served it in the headers", async () => {
    const { data, response } = await client.responses.create({ model: "llama3.2:3b", input: "hello there" }).withResponse();
    expect(response.headers.get("x-fleet-served-model")).toBe("llama3.2:3b");
    expect(response.headers.get("x-fleet-node")).toBe("studio");
    expect(data).toMatchObject({ object: "response", status: "completed", model: "llama3.2:3b", error: null, incomplete_details: null });
    expect(data.id).toStartWith("resp_");
    expect(data.output.map((o) => o.type)).toEqual(["message"]);
    expect(data.output_text.length).toBeGreaterThan(10);
    expect(data.usage!.output_tokens).toBeGreaterThan(0);
    expect(data.usage!.total_tokens).toBe(data.usage!.input_tokens + data.usage!.output_tokens);
  });

  test("function_call → function_call_output round trip; the reasoning item comes back and stays out of the prompt", async () => {
    const first = await client.responses.create({ model: "qwen3:8b", input: "What is the weather in Paris?\nsim: call get_weather", tools: [WEATHER] });
    expect(first.output.map((o) => o.type)).toEqual(["reasoning", "function_call"]);
    const reasoning = first.output[0] as OpenAI.Responses.ResponseReasoningItem;
    expect(reasoning.content![0]!.type).toBe("reasoning_text");
    expect(reasoning.content![0]!.text).toContain("Paris");
    const call = first.output[1] as OpenAI.Responses.ResponseFunctionToolCall;
    expect(call).toMatchObject({ name: "get_weather", status: "completed" });
    expect(JSON.parse(call.arguments)).toHaveProperty("city");

    const answer = (history: OpenAI.Responses.ResponseInputItem[]) =>
      client.responses.create({
        model: "qwen3:8b",
        tools: [WEATHER],
        input: [{ role: "user", content: "sim: call get_weather" }, ...history, { type: "function_call_output", call_id: call.call_id, output: "18C, sunny" }],
      });
    const second = await answer(first.output as OpenAI.Responses.ResponseInputItem[]);
    expect(second.output.map((o) => o.type)).toEqual(["reasoning", "message"]);
    expect(second.output_text.length).toBeGreaterThan(10);
    // The same prompt without the reasoning item: it added nothing to what the model read.
    expect((await answer([call])).usage!.input_tokens).toBe(second.usage!.input_tokens);
  });

  test("a custom tool's call arrives as a custom_tool_call with its raw input, and its output goes back", async () => {
    const first = await client.responses.create({ model: "qwen2.5-coder:7b", input: "sim: call exec", tools: [EXEC] });
    expect(first.output).toEqual([expect.objectContaining({ type: "custom_tool_call", name: "exec", input: "example input", status: "completed" })]);
    const call = first.output[0] as OpenAI.Responses.ResponseCustomToolCall;
    const second = await client.responses.create({
      model: "qwen2.5-coder:7b",
      tools: [EXEC],
      input: [{ role: "user", content: "sim: call exec" }, call, { type: "custom_tool_call_output", call_id: call.call_id, output: "hello" }],
    });
    expect(second.output.map((o) => o.type)).toEqual(["message"]);
  });

  test("max_output_tokens cuts the answer: status incomplete, reason max_output_tokens (streamed: response.incomplete)", async () => {
    const cut = await client.responses.create({ model: "llama3.2:3b", input: "tell me a long story", max_output_tokens: 3 });
    expect(cut.status).toBe("incomplete");
    expect(cut.incomplete_details).toEqual({ reason: "max_output_tokens" });
    expect(cut.usage!.output_tokens).toBe(3);
    expect((cut.output[0] as OpenAI.Responses.ResponseOutputMessage).status).toBe("incomplete");

    const events = await frames(await post({ model: "llama3.2:3b", input: "tell me a long story", max_output_tokens: 3, stream: true }));
    expect(outline(events)).toEqual([...START, ...MESSAGE, "response.incomplete"]);
    expect(events.at(-1).response).toMatchObject({ status: "incomplete", incomplete_details: { reason: "max_output_tokens" } });
  });

  test("unknown item and tool types are dropped and logged once per type", async () => {
    const input = [
      { type: "item_reference", id: "msg_earlier" },
      { type: "web_search_call", id: "ws_1", status: "completed", action: { type: "search", query: "herd" } },
      { role: "user", content: "hello" },
    ];
    for (let i = 0; i < 2; i++) {
      const res = await post({ model: "llama3.2:3b", input, tools: [{ type: "web_search" }] });
      expect(res.status).toBe(200);
      expect(((await res.json()) as any).status).toBe("completed");
    }
    // A third, new type: once its warning is out, the two earlier requests' would be too.
    await post({ model: "llama3.2:3b", input: [{ type: "probe_item" }, { role: "user", content: "hi" }] }).then((r) => r.text());
    await eventually(async () => output().includes(`input items of type "probe_item"`), 2000, "the probe's warning");
    expect(output().match(/ warn .*input items of type "item_reference"/g)?.length).toBe(1);
    expect(output().match(/ warn .*input items of type "web_search_call"/g)?.length).toBe(1);
    expect(output().match(/ warn .*tools of type "web_search"/g)?.length).toBe(1);
  });

  test("errors in OpenAI's shape: previous_response_id is refused with 400, an mlx: model no node runs is a 404", async () => {
    const stateful = await client.responses.create({ model: "llama3.2:3b", input: "again", previous_response_id: "resp_abc" }).catch((e) => e);
    expect(stateful).toBeInstanceOf(OpenAI.BadRequestError);
    expect(stateful.message).toContain("resend the whole conversation in `input`");
    const mlx = await client.responses.create({ model: "mlx:mlx-community/Qwen3-4B-4bit", input: "hi" }).catch((e) => e);
    expect(mlx).toBeInstanceOf(OpenAI.NotFoundError);
    expect(mlx.message).toContain("no node runs an MLX server");
    const badImage = await client.responses.create({ model: "gemma3:4b", input: [{ role: "user", content: [{ type: "input_image", image_url: "https://x/y.png", detail: "auto" }] }] }).catch((e) => e);
    expect(badImage).toBeInstanceOf(OpenAI.BadRequestError);
    expect(badImage.message).toContain("input[0].content[0].image_url");
  });
});

describe("model resolution", () => {
  test("gpt-5-codex runs on the best loaded coder, and the trace says why", async () => {
    const { data, response } = await client.responses.create({ model: "gpt-5-codex", input: "write a haiku about routers" }).withResponse();
    expect(response.headers.get("x-fleet-served-model")).toBe("qwen2.5-coder:7b"); // loaded, over the bigger coder on disk
    expect(data.model).toBe("qwen2.5-coder:7b");
    const trace = await eventually(async () => {
      const traces = (await getJson(`${url}/dashboard/api/traces?limit=100`)).traces as any[];
      return traces.find((t) => t.resolution?.startsWith(`"gpt-5-codex"`));
    }, 3000, "the gpt-5-codex trace");
    expect(trace.resolution).toBe(`"gpt-5-codex" → qwen2.5-coder:7b: auto-routed (coding tier) to the best loaded model`);
    expect(trace).toMatchObject({ original_model: "gpt-5-codex", model: "qwen2.5-coder:7b", original_format: "responses" });
    expect(response.headers.get("x-fleet-requested-model")).toBe("gpt-5-codex");
    expect(trace.model).toBe("qwen2.5-coder:7b");
  });

  test("a request carrying an image auto-routes to a vision-capable model", async () => {
    const { data, response } = await client.responses
      .create({ model: "gpt-5-codex", input: [{ role: "user", content: [{ type: "input_text", text: "what is in this picture?" }, { type: "input_image", image_url: PNG, detail: "auto" }] }] })
      .withResponse();
    expect(response.headers.get("x-fleet-served-model")).toBe("gemma3:4b");
    expect(data.output_text.length).toBeGreaterThan(0);
  });
});

describe("the event stream", () => {
  test("text with reasoning, checked event by event over raw SSE", async () => {
    const events = await frames(await post({ model: "qwen3:8b", input: "why is the sky blue", reasoning: { effort: "high" }, stream: true }));
    expect(outline(events)).toEqual([...START, ...REASONING, ...MESSAGE, "response.completed"]);
    expect(events[0].response).toMatchObject({ status: "in_progress", output: [], usage: null, reasoning: { effort: "high" } });
    const final = events.at(-1).response;
    expect(final.id).toBe(events[0].response.id);
    expect(final).toMatchObject({ status: "completed", model: "qwen3:8b" });
    expect(final.usage.output_tokens_details.reasoning_tokens).toBeGreaterThan(0);
    expect(final.usage.output_tokens).toBeGreaterThan(final.usage.output_tokens_details.reasoning_tokens);
  });

  test("a function call streamed through the SDK: reasoning, then the call's arguments", async () => {
    const stream = await client.responses.create({ model: "qwen3:8b", input: "sim: call get_weather", tools: [WEATHER], stream: true });
    const events: any[] = [];
    for await (const event of stream) events.push(event);
    expect(outline(events)).toEqual([...START, ...REASONING, ...FUNCTION_CALL, "response.completed"]);
    const call = events.find((e) => e.type === "response.function_call_arguments.done");
    expect(call.name).toBe("get_weather");
    expect(JSON.parse(call.arguments)).toHaveProperty("city");
  });

  test("a node dying mid-stream ends it with response.failed", async () => {
    const events = await frames(await post({ model: "llama3.1:8b", input: "tell me a story", stream: true }));
    expect(outline(events)).toEqual([...START, ...MESSAGE, "response.failed"]);
    expect(events.at(-2).item.status).toBe("incomplete");
    expect(events.at(-1).response.status).toBe("failed");
    expect(events.at(-1).response.error.message).toContain("node flaky");
  });
});

describe("Codex", () => {
  const fixture = JSON.parse(readFileSync(join(import.meta.dir, "fixtures/codex-turn.json"), "utf8"));
  const codex = (body: unknown) => fetch(`${url}${fixture.path}`, { method: "POST", headers: fixture.headers, body: JSON.stringify(body) });
  const warnings = (what: string) => output().split("\n").filter((l) => / warn  codex rewrite: /.test(l) && l.includes(what)).length;

  test("a Codex turn: the exec call streams as a custom_tool_call; its output sent back, the answer streams as a message", async () => {
    const res = await codex(fixture.body);
    expect(res.status).toBe(200);
    expect(res.headers.get("x-fleet-served-model")).toBe("qwen2.5-coder:7b"); // reasoning.effort asks nothing of a model that cannot think
    const events = await frames(res);
    expect(outline(events)).toEqual([...START, ...CUSTOM_CALL, "response.completed"]);
    const call = events.at(-1).response.output[0];
    expect(call).toMatchObject({ type: "custom_tool_call", name: "exec", input: "example input", status: "completed" });
    expect(call.call_id).toBeString();
    expect(events[0].response.instructions).toBe(fixture.body.instructions);

    // Codex's next request: the same history, the call it ran, and what the call printed.
    const next = { ...fixture.body, input: [...fixture.body.input, call, { ...fixture.tool_output, call_id: call.call_id }] };
    const answer = await frames(await codex(next));
    expect(outline(answer)).toEqual([...START, ...MESSAGE, "response.completed"]);
    expect(answer.at(-1).response.output[0].content[0].text.length).toBeGreaterThan(10);
  });

  test("rewrite: a top-level exec_command call becomes a custom_tool_call on exec, logged at WARNING", async () => {
    const before = warnings("exec_command call became");
    const res = await client.responses.create({
      model: "qwen2.5-coder:7b",
      tools: [EXEC_COMMAND],
      input: [{ type: "additional_tools", role: "developer", tools: [EXEC] }, { role: "user", content: "sim: call exec_command" }],
    });
    expect(res.output).toEqual([expect.objectContaining({ type: "custom_tool_call", name: "exec", input: `text(await tools.exec_command({"cmd":"example cmd"}));` })]);
    await eventually(async () => warnings("exec_command call became") === before + 1, 2000, "the rewrite's warning");
  });

  test("rewrite: an apply_patch call becomes an exec_command heredoc (and then, with exec offered, a call on exec), logged at WARNING", async () => {
    const before = warnings("apply_patch tool call became");
    const direct = await client.responses.create({ model: "qwen2.5-coder:7b", tools: [EXEC_COMMAND, APPLY_PATCH], input: "sim: call apply_patch" });
    const call = direct.output[0] as OpenAI.Responses.ResponseFunctionToolCall;
    expect(call).toMatchObject({ type: "function_call", name: "exec_command" });
    expect(JSON.parse(call.arguments)).toEqual({ cmd: `apply_patch <<'EOF'\n${PATCH}\nEOF` });

    const viaExec = await client.responses.create({ model: "qwen2.5-coder:7b", tools: [APPLY_PATCH, EXEC], input: "sim: call apply_patch" });
    expect(viaExec.output).toEqual([
      expect.objectContaining({ type: "custom_tool_call", name: "exec", input: `text(await tools.exec_command(${JSON.stringify({ cmd: `apply_patch <<'EOF'\n${PATCH}\nEOF` })}));` }),
    ]);
    await eventually(async () => warnings("apply_patch tool call became") === before + 2 && warnings("exec_command call became") >= 2, 2000, "the rewrites' warnings");
  });
});
