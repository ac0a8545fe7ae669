#!/usr/bin/env bash
# herd from the shell. Start a demo fleet first: `npm start -- sim` (or run `herd` on your Macs).
HERD=${HERD:-http://localhost:11435}

# Ollama's API: streamed NDJSON by default; the X-Fleet-* headers say which node served.
curl -sN -D - "$HERD/api/chat" -d '{"model":"llama3.2:3b","messages":[{"role":"user","content":"hello"}]}'

# OpenAI's API: SSE with usage at the end.
curl -sN "$HERD/v1/chat/completions" -H 'content-type: application/json' \
  -d '{"model":"llama3.2:3b","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hello"}]}'

# Tag requests for per-app analytics, and name backups in case the model is missing.
curl -s "$HERD/api/generate" -H 'X-Herd-Tags: my-app,prod' \
  -d '{"model":"qwen3:32b","fallback_models":["qwen3:8b"],"prompt":"why is the sky blue?","stream":false}'

# The fleet: nodes, queues, limits, recent traces.
curl -s "$HERD/fleet/status"
curl -s "$HERD/fleet/queue"
curl -s "$HERD/dashboard/api/traces?limit=5"
