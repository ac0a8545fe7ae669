// The conformance suite every encoder runs: the same answer, as Events, must give
// each wire's exact bytes. The expected bytes are what herd sent before Events
// (its encoders then read Ollama's lines), with ids and clocks made fixed.
import { afterAll, beforeAll, expect, setSystemTime, spyOn, test } from "bun:test";
import type { Chunk, Usage } from "../core/events.ts";
import type { Encoder } from "../core/encoder.ts";
import { messagesEncoder } from "./anthropic-codec.ts";
import { completionEncoder } from "./completions-codec.ts";
import { ndjson } from "./ollama-codec.ts";
import { chatEncoder } from "./openai-codec.ts";
import { responsesEncoder } from "./responses-codec.ts";

type Wire = "anthropic" | "chat" | "responses" | "ollama" | "completions";

const encoders: Record<Wire, (stream: boolean) => Encoder> = {
  anthropic: (stream) => messagesEncoder(stream, { model: "claude", inputTokens: () => 3, stops: [], omitThinking: false, pingEveryMs: 1000 }),
  chat: (stream) => chatEncoder(stream, true),
  responses: (stream) => responsesEncoder(stream, { offered: new Map(), echo: {} }, () => {}),
  // An answer without the node's bytes (an MLX server's): Ollama's lines written from its Events.
  ollama: (stream) => ndjson("chat", stream),
  completions: (stream) => completionEncoder(stream, true, ""),
};

const usage: Usage = { type: "usage", promptTokens: 3, completionTokens: 2 };

const table: { name: string; stream: boolean; chunks: Chunk[]; wire: Record<Wire, string[]> }[] = [
  {
    name: "text",
    stream: true,
    chunks: [
      { model: "m", events: [{ type: "text", text: "Hel" }] },
      { model: "m", events: [{ type: "text", text: "lo" }] },
      { model: "m", events: [usage, { type: "done", reason: "stop" }] },
    ],
    wire: {
      anthropic: [
        'event: message_start\ndata: {"type":"message_start","message":{"id":"msg_000000010000400080000000","type":"message","role":"assistant","model":"claude","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":3,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":0}}}\n\n',
        'event: content_block_start\ndata: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}\n\n',
        'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hel"}}\n\n',
        'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"lo"}}\n\n',
        'event: content_block_stop\ndata: {"type":"content_block_stop","index":0}\n\n',
        'event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"input_tokens":3,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":2}}\n\n',
        'event: message_stop\ndata: {"type":"message_stop"}\n\n',
      ],
      chat: [
        'data: {"id":"chatcmpl-000000010000400080000000","object":"chat.completion.chunk","created":1767323045,"model":"m","system_fingerprint":"fp_herd","choices":[{"index":0,"delta":{"role":"assistant"},"finish_reason":null,"logprobs":null}]}\n\n',
        'data: {"id":"chatcmpl-000000010000400080000000","object":"chat.completion.chunk","created":1767323045,"model":"m","system_fingerprint":"fp_herd","choices":[{"index":0,"delta":{"content":"Hel"},"finish_reason":null,"logprobs":null}]}\n\n',
        'data: {"id":"chatcmpl-000000010000400080000000","object":"chat.completion.chunk","created":1767323045,"model":"m","system_fingerprint":"fp_herd","choices":[{"index":0,"delta":{"content":"lo"},"finish_reason":null,"logprobs":null}]}\n\n',
        'data: {"id":"chatcmpl-000000010000400080000000","object":"chat.completion.chunk","created":1767323045,"model":"m","system_fingerprint":"fp_herd","choices":[{"index":0,"delta":{},"finish_reason":"stop","logprobs":null}]}\n\n',
        'data: {"id":"chatcmpl-000000010000400080000000","object":"chat.completion.chunk","created":1767323045,"model":"m","system_fingerprint":"fp_herd","choices":[],"usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5}}\n\n',
        'data: [DONE]\n\n',
      ],
      responses: [
        'event: response.created\ndata: {"type":"response.created","sequence_number":0,"response":{"id":"resp_000000010000400080000000","object":"response","created_at":1767323045,"status":"in_progress","error":null,"incomplete_details":null,"model":"m","output":[],"usage":null}}\n\n',
        'event: response.in_progress\ndata: {"type":"response.in_progress","sequence_number":1,"response":{"id":"resp_000000010000400080000000","object":"response","created_at":1767323045,"status":"in_progress","error":null,"incomplete_details":null,"model":"m","output":[],"usage":null}}\n\n',
        'event: response.output_item.added\ndata: {"type":"response.output_item.added","sequence_number":2,"output_index":0,"item":{"id":"msg_000000020000400080000000","type":"message","role":"assistant","content":[],"status":"in_progress"}}\n\n',
        'event: response.content_part.added\ndata: {"type":"response.content_part.added","sequence_number":3,"item_id":"msg_000000020000400080000000","output_index":0,"content_index":0,"part":{"type":"output_text","text":"","annotations":[],"logprobs":[]}}\n\n',
        'event: response.output_text.delta\ndata: {"type":"response.output_text.delta","sequence_number":4,"item_id":"msg_000000020000400080000000","output_index":0,"content_index":0,"delta":"Hel","logprobs":[]}\n\n',
        'event: response.output_text.delta\ndata: {"type":"response.output_text.delta","sequence_number":5,"item_id":"msg_000000020000400080000000","output_index":0,"content_index":0,"delta":"lo","logprobs":[]}\n\n',
        'event: response.output_text.done\ndata: {"type":"response.output_text.done","sequence_number":6,"item_id":"msg_000000020000400080000000","output_index":0,"content_index":0,"text":"Hello","logprobs":[]}\n\n',
        'event: response.content_part.done\ndata: {"type":"response.content_part.done","sequence_number":7,"item_id":"msg_000000020000400080000000","output_index":0,"content_index":0,"part":{"type":"output_text","text":"Hello","annotations":[],"logprobs":[]}}\n\n',
        'event: response.output_item.done\ndata: {"type":"response.output_item.done","sequence_number":8,"output_index":0,"item":{"id":"msg_000000020000400080000000","type":"message","role":"assistant","content":[{"type":"output_text","text":"Hello","annotations":[],"logprobs":[]}],"status":"completed"}}\n\n',
        'event: response.completed\ndata: {"type":"response.completed","sequence_number":9,"response":{"id":"resp_000000010000400080000000","object":"response","created_at":1767323045,"status":"completed","error":null,"incomplete_details":null,"model":"m","output":[{"id":"msg_000000020000400080000000","type":"message","role":"assistant","content":[{"type":"output_text","text":"Hello","annotations":[],"logprobs":[]}],"status":"completed"}],"usage":{"input_tokens":3,"input_tokens_details":{"cached_tokens":0},"output_tokens":2,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":5},"completed_at":1767323045}}\n\n',
      ],
      ollama: [
        '{"model":"m","created_at":"2026-01-02T03:04:05.000Z","message":{"role":"assistant","content":"Hel"},"done":false}\n',
        '{"model":"m","created_at":"2026-01-02T03:04:05.000Z","message":{"role":"assistant","content":"lo"},"done":false}\n',
        '{"model":"m","created_at":"2026-01-02T03:04:05.000Z","message":{"role":"assistant","content":""},"done":true,"done_reason":"stop","prompt_eval_count":3,"eval_count":2}\n',
      ],
      completions: [
        'data: {"id":"cmpl-000000010000400080000000","object":"text_completion","created":1767323045,"choices":[{"text":"Hel","index":0,"logprobs":null,"finish_reason":null}],"model":"m","system_fingerprint":"fp_herd"}\n\n',
        'data: {"id":"cmpl-000000010000400080000000","object":"text_completion","created":1767323045,"choices":[{"text":"lo","index":0,"logprobs":null,"finish_reason":null}],"model":"m","system_fingerprint":"fp_herd"}\n\n',
        'data: {"id":"cmpl-000000010000400080000000","object":"text_completion","created":1767323045,"choices":[{"text":"","index":0,"logprobs":null,"finish_reason":"stop"}],"model":"m","system_fingerprint":"fp_herd"}\n\n',
        'data: {"id":"cmpl-000000010000400080000000","object":"text_completion","created":1767323045,"choices":[],"model":"m","system_fingerprint":"fp_herd","usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5}}\n\n',
        'data: [DONE]\n\n',
      ],
    },
  },
  {
    name: "thinking, then a tool call",
    stream: true,
    chunks: [
      { model: "m", events: [{ type: "thinking", text: "hm" }] },
      { model: "m", events: [{ type: "tool_call", name: "read", arguments: { path: "a" }, id: "c1" }] },
      { model: "m", events: [usage, { type: "done", reason: "stop" }] },
    ],
    wire: {
      anthropic: [
        'event: message_start\ndata: {"type":"message_start","message":{"id":"msg_000000010000400080000000","type":"message","role":"assistant","model":"claude","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":3,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":0}}}\n\n',
        'event: content_block_start\ndata: {"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}\n\n',
        'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"hm"}}\n\n',
        'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"herd.thinking.aG0="}}\n\n',
        'event: content_block_stop\ndata: {"type":"content_block_stop","index":0}\n\n',
        'event: content_block_start\ndata: {"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_000000020000400080000000","name":"read","input":{}}}\n\n',
        'event: content_block_delta\ndata: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\\"path\\":\\"a\\"}"}}\n\n',
        'event: content_block_stop\ndata: {"type":"content_block_stop","index":1}\n\n',
        'event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"input_tokens":3,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":2}}\n\n',
        'event: message_stop\ndata: {"type":"message_stop"}\n\n',
      ],
      chat: [
        'data: {"id":"chatcmpl-000000010000400080000000","object":"chat.completion.chunk","created":1767323045,"model":"m","system_fingerprint":"fp_herd","choices":[{"index":0,"delta":{"role":"assistant"},"finish_reason":null,"logprobs":null}]}\n\n',
        'data: {"id":"chatcmpl-000000010000400080000000","object":"chat.completion.chunk","created":1767323045,"model":"m","system_fingerprint":"fp_herd","choices":[{"index":0,"delta":{"reasoning":"hm"},"finish_reason":null,"logprobs":null}]}\n\n',
        'data: {"id":"chatcmpl-000000010000400080000000","object":"chat.completion.chunk","created":1767323045,"model":"m","system_fingerprint":"fp_herd","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c1","type":"function","function":{"name":"read","arguments":"{\\"path\\":\\"a\\"}"}}]},"finish_reason":null,"logprobs":null}]}\n\n',
        'data: {"id":"chatcmpl-000000010000400080000000","object":"chat.completion.chunk","created":1767323045,"model":"m","system_fingerprint":"fp_herd","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls","logprobs":null}]}\n\n',
        'data: {"id":"chatcmpl-000000010000400080000000","object":"chat.completion.chunk","created":1767323045,"model":"m","system_fingerprint":"fp_herd","choices":[],"usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5}}\n\n',
        'data: [DONE]\n\n',
      ],
      responses: [
        'event: response.created\ndata: {"type":"response.created","sequence_number":0,"response":{"id":"resp_000000010000400080000000","object":"response","created_at":1767323045,"status":"in_progress","error":null,"incomplete_details":null,"model":"m","output":[],"usage":null}}\n\n',
        'event: response.in_progress\ndata: {"type":"response.in_progress","sequence_number":1,"response":{"id":"resp_000000010000400080000000","object":"response","created_at":1767323045,"status":"in_progress","error":null,"incomplete_details":null,"model":"m","output":[],"usage":null}}\n\n',
        'event: response.output_item.added\ndata: {"type":"response.output_item.added","sequence_number":2,"output_index":0,"item":{"id":"rs_000000020000400080000000","type":"reasoning","summary":[],"content":[],"status":"in_progress"}}\n\n',
        'event: response.content_part.added\ndata: {"type":"response.content_part.added","sequence_number":3,"item_id":"rs_000000020000400080000000","output_index":0,"content_index":0,"part":{"type":"reasoning_text","text":""}}\n\n',
        'event: response.reasoning_text.delta\ndata: {"type":"response.reasoning_text.delta","sequence_number":4,"item_id":"rs_000000020000400080000000","output_index":0,"content_index":0,"delta":"hm"}\n\n',
        'event: response.reasoning_text.done\ndata: {"type":"response.reasoning_text.done","sequence_number":5,"item_id":"rs_000000020000400080000000","output_index":0,"content_index":0,"text":"hm"}\n\n',
        'event: response.content_part.done\ndata: {"type":"response.content_part.done","sequence_number":6,"item_id":"rs_000000020000400080000000","output_index":0,"content_index":0,"part":{"type":"reasoning_text","text":"hm"}}\n\n',
        'event: response.output_item.done\ndata: {"type":"response.output_item.done","sequence_number":7,"output_index":0,"item":{"id":"rs_000000020000400080000000","type":"reasoning","summary":[],"content":[{"type":"reasoning_text","text":"hm"}],"status":"completed"}}\n\n',
        'event: response.output_item.added\ndata: {"type":"response.output_item.added","sequence_number":8,"output_index":1,"item":{"id":"fc_000000030000400080000000","type":"function_call","call_id":"c1","name":"read","arguments":"","status":"in_progress"}}\n\n',
        'event: response.function_call_arguments.delta\ndata: {"type":"response.function_call_arguments.delta","sequence_number":9,"item_id":"fc_000000030000400080000000","output_index":1,"delta":"{\\"path\\":\\"a\\"}"}\n\n',
        'event: response.function_call_arguments.done\ndata: {"type":"response.function_call_arguments.done","sequence_number":10,"item_id":"fc_000000030000400080000000","output_index":1,"name":"read","arguments":"{\\"path\\":\\"a\\"}"}\n\n',
        'event: response.output_item.done\ndata: {"type":"response.output_item.done","sequence_number":11,"output_index":1,"item":{"id":"fc_000000030000400080000000","type":"function_call","call_id":"c1","name":"read","arguments":"{\\"path\\":\\"a\\"}","status":"completed"}}\n\n',
        'event: response.completed\ndata: {"type":"response.completed","sequence_number":12,"response":{"id":"resp_000000010000400080000000","object":"response","created_at":1767323045,"status":"completed","error":null,"incomplete_details":null,"model":"m","output":[{"id":"rs_000000020000400080000000","type":"reasoning","summary":[],"content":[{"type":"reasoning_text","text":"hm"}],"status":"completed"},{"id":"fc_000000030000400080000000","type":"function_call","call_id":"c1","name":"read","arguments":"{\\"path\\":\\"a\\"}","status":"completed"}],"usage":{"input_tokens":3,"input_tokens_details":{"cached_tokens":0},"output_tokens":2,"output_tokens_details":{"reasoning_tokens":1},"total_tokens":5},"completed_at":1767323045}}\n\n',
      ],
      ollama: [
        '{"model":"m","created_at":"2026-01-02T03:04:05.000Z","message":{"role":"assistant","content":"","thinking":"hm"},"done":false}\n',
        '{"model":"m","created_at":"2026-01-02T03:04:05.000Z","message":{"role":"assistant","content":"","tool_calls":[{"id":"c1","function":{"name":"read","arguments":{"path":"a"}}}]},"done":false}\n',
        '{"model":"m","created_at":"2026-01-02T03:04:05.000Z","message":{"role":"assistant","content":""},"done":true,"done_reason":"stop","prompt_eval_count":3,"eval_count":2}\n',
      ],
      completions: [
        // Neither the thinking nor the tool call is text: Ollama's layer writes the response alone.
        'data: {"id":"cmpl-000000010000400080000000","object":"text_completion","created":1767323045,"choices":[{"text":"","index":0,"logprobs":null,"finish_reason":"stop"}],"model":"m","system_fingerprint":"fp_herd"}\n\n',
        'data: {"id":"cmpl-000000010000400080000000","object":"text_completion","created":1767323045,"choices":[],"model":"m","system_fingerprint":"fp_herd","usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5}}\n\n',
        'data: [DONE]\n\n',
      ],
    },
  },
  {
    name: "cut at the token limit",
    stream: true,
    chunks: [
      { model: "m", events: [{ type: "text", text: "cut" }] },
      { model: "m", events: [usage, { type: "done", reason: "length" }] },
    ],
    wire: {
      anthropic: [
        'event: message_start\ndata: {"type":"message_start","message":{"id":"msg_000000010000400080000000","type":"message","role":"assistant","model":"claude","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":3,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":0}}}\n\n',
        'event: content_block_start\ndata: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}\n\n',
        'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"cut"}}\n\n',
        'event: content_block_stop\ndata: {"type":"content_block_stop","index":0}\n\n',
        'event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":"max_tokens","stop_sequence":null},"usage":{"input_tokens":3,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":2}}\n\n',
        'event: message_stop\ndata: {"type":"message_stop"}\n\n',
      ],
      chat: [
        'data: {"id":"chatcmpl-000000010000400080000000","object":"chat.completion.chunk","created":1767323045,"model":"m","system_fingerprint":"fp_herd","choices":[{"index":0,"delta":{"role":"assistant"},"finish_reason":null,"logprobs":null}]}\n\n',
        'data: {"id":"chatcmpl-000000010000400080000000","object":"chat.completion.chunk","created":1767323045,"model":"m","system_fingerprint":"fp_herd","choices":[{"index":0,"delta":{"content":"cut"},"finish_reason":null,"logprobs":null}]}\n\n',
        'data: {"id":"chatcmpl-000000010000400080000000","object":"chat.completion.chunk","created":1767323045,"model":"m","system_fingerprint":"fp_herd","choices":[{"index":0,"delta":{},"finish_reason":"length","logprobs":null}]}\n\n',
        'data: {"id":"chatcmpl-000000010000400080000000","object":"chat.completion.chunk","created":1767323045,"model":"m","system_fingerprint":"fp_herd","choices":[],"usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5}}\n\n',
        'data: [DONE]\n\n',
      ],
      responses: [
        'event: response.created\ndata: {"type":"response.created","sequence_number":0,"response":{"id":"resp_000000010000400080000000","object":"response","created_at":1767323045,"status":"in_progress","error":null,"incomplete_details":null,"model":"m","output":[],"usage":null}}\n\n',
        'event: response.in_progress\ndata: {"type":"response.in_progress","sequence_number":1,"response":{"id":"resp_000000010000400080000000","object":"response","created_at":1767323045,"status":"in_progress","error":null,"incomplete_details":null,"model":"m","output":[],"usage":null}}\n\n',
        'event: response.output_item.added\ndata: {"type":"response.output_item.added","sequence_number":2,"output_index":0,"item":{"id":"msg_000000020000400080000000","type":"message","role":"assistant","content":[],"status":"in_progress"}}\n\n',
        'event: response.content_part.added\ndata: {"type":"response.content_part.added","sequence_number":3,"item_id":"msg_000000020000400080000000","output_index":0,"content_index":0,"part":{"type":"output_text","text":"","annotations":[],"logprobs":[]}}\n\n',
        'event: response.output_text.delta\ndata: {"type":"response.output_text.delta","sequence_number":4,"item_id":"msg_000000020000400080000000","output_index":0,"content_index":0,"delta":"cut","logprobs":[]}\n\n',
        'event: response.output_text.done\ndata: {"type":"response.output_text.done","sequence_number":5,"item_id":"msg_000000020000400080000000","output_index":0,"content_index":0,"text":"cut","logprobs":[]}\n\n',
        'event: response.content_part.done\ndata: {"type":"response.content_part.done","sequence_number":6,"item_id":"msg_000000020000400080000000","output_index":0,"content_index":0,"part":{"type":"output_text","text":"cut","annotations":[],"logprobs":[]}}\n\n',
        'event: response.output_item.done\ndata: {"type":"response.output_item.done","sequence_number":7,"output_index":0,"item":{"id":"msg_000000020000400080000000","type":"message","role":"assistant","content":[{"type":"output_text","text":"cut","annotations":[],"logprobs":[]}],"status":"incomplete"}}\n\n',
        'event: response.incomplete\ndata: {"type":"response.incomplete","sequence_number":8,"response":{"id":"resp_000000010000400080000000","object":"response","created_at":1767323045,"status":"incomplete","error":null,"incomplete_details":{"reason":"max_output_tokens"},"model":"m","output":[{"id":"msg_000000020000400080000000","type":"message","role":"assistant","content":[{"type":"output_text","text":"cut","annotations":[],"logprobs":[]}],"status":"incomplete"}],"usage":{"input_tokens":3,"input_tokens_details":{"cached_tokens":0},"output_tokens":2,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":5},"completed_at":1767323045}}\n\n',
      ],
      ollama: [
        '{"model":"m","created_at":"2026-01-02T03:04:05.000Z","message":{"role":"assistant","content":"cut"},"done":false}\n',
        '{"model":"m","created_at":"2026-01-02T03:04:05.000Z","message":{"role":"assistant","content":""},"done":true,"done_reason":"length","prompt_eval_count":3,"eval_count":2}\n',
      ],
      completions: [
        'data: {"id":"cmpl-000000010000400080000000","object":"text_completion","created":1767323045,"choices":[{"text":"cut","index":0,"logprobs":null,"finish_reason":null}],"model":"m","system_fingerprint":"fp_herd"}\n\n',
        'data: {"id":"cmpl-000000010000400080000000","object":"text_completion","created":1767323045,"choices":[{"text":"","index":0,"logprobs":null,"finish_reason":"length"}],"model":"m","system_fingerprint":"fp_herd"}\n\n',
        'data: {"id":"cmpl-000000010000400080000000","object":"text_completion","created":1767323045,"choices":[],"model":"m","system_fingerprint":"fp_herd","usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5}}\n\n',
        'data: [DONE]\n\n',
      ],
    },
  },
  {
    name: "whole",
    stream: false,
    chunks: [{ model: "m", events: [{ type: "thinking", text: "hm" }, { type: "text", text: "ok" }, usage, { type: "done", reason: "stop" }] }],
    wire: {
      anthropic: [
        '{"id":"msg_000000010000400080000000","type":"message","role":"assistant","model":"claude","content":[{"type":"thinking","thinking":"hm","signature":"herd.thinking.aG0="},{"type":"text","text":"ok"}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":3,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":2}}',
      ],
      chat: [
        '{"id":"chatcmpl-000000010000400080000000","object":"chat.completion","created":1767323045,"model":"m","system_fingerprint":"fp_herd","choices":[{"index":0,"message":{"role":"assistant","content":"ok","reasoning":"hm"},"finish_reason":"stop","logprobs":null}],"usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5}}',
      ],
      responses: [
        '{"id":"resp_000000010000400080000000","object":"response","created_at":1767323045,"status":"completed","error":null,"incomplete_details":null,"model":"m","output":[{"id":"rs_000000020000400080000000","type":"reasoning","summary":[],"content":[{"type":"reasoning_text","text":"hm"}],"status":"completed"},{"id":"msg_000000030000400080000000","type":"message","role":"assistant","content":[{"type":"output_text","text":"ok","annotations":[],"logprobs":[]}],"status":"completed"}],"usage":{"input_tokens":3,"input_tokens_details":{"cached_tokens":0},"output_tokens":2,"output_tokens_details":{"reasoning_tokens":1},"total_tokens":5},"completed_at":1767323045}',
      ],
      ollama: [
        '{"model":"m","created_at":"2026-01-02T03:04:05.000Z","message":{"role":"assistant","content":"ok","thinking":"hm"},"done":true,"done_reason":"stop","prompt_eval_count":3,"eval_count":2}\n',
      ],
      completions: [
        '{"id":"cmpl-000000010000400080000000","object":"text_completion","created":1767323045,"model":"m","system_fingerprint":"fp_herd","choices":[{"text":"ok","index":0,"logprobs":null,"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5}}',
      ],
    },
  },
];

// Ids are a counter, restarted for each encoder; the clock stands still.
let ids = 0;
beforeAll(() => {
  setSystemTime(new Date("2026-01-02T03:04:05.000Z"));
  spyOn(crypto, "randomUUID").mockImplementation(() => `${(++ids).toString(16).padStart(8, "0")}-0000-4000-8000-000000000000` as ReturnType<typeof crypto.randomUUID>);
});
afterAll(() => setSystemTime());

for (const { name, stream, chunks, wire } of table) {
  for (const [kind, expected] of Object.entries(wire) as [Wire, string[]][]) {
    test(`${name}: ${kind}`, () => {
      ids = 0;
      const encoder = encoders[kind](stream);
      const bytes = chunks.map((c) => encoder.encode(c)).join("") + encoder.end();
      expect(bytes).toBe(expected.join(""));
    });
  }
}

test("an Ollama node's own bytes go to an Ollama client untouched, unknown fields and all", () => {
  const raw = '{"model":"m","created_at":"2020-01-01T00:00:00Z","message":{"role":"assistant","content":"hi"},"done":false,"new_field":[1]}';
  expect(ndjson("chat", true).encode({ raw, model: "m", events: [{ type: "text", text: "hi" }] })).toBe(`${raw}\n`);
});

test("an answer to /api/generate without the node's bytes is written at the top level, as Ollama's generate answers", () => {
  const encoder = ndjson("generate", true);
  const lines = [
    { model: "m", events: [{ type: "thinking", text: "hm" }, { type: "text", text: "4" }] },
    { model: "m", events: [usage, { type: "done", reason: "stop" }] },
  ] satisfies Chunk[];
  expect(lines.map((c) => encoder.encode(c)).join("")).toBe(
    '{"model":"m","created_at":"2026-01-02T03:04:05.000Z","response":"4","thinking":"hm","done":false}\n' +
      '{"model":"m","created_at":"2026-01-02T03:04:05.000Z","response":"","done":true,"done_reason":"stop","prompt_eval_count":3,"eval_count":2}\n',
  );
});
