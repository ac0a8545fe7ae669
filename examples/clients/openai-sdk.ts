// herd with the official OpenAI client: the base URL is the router's /v1.
// Run: npx bun examples/clients/openai-sdk.ts   (with `npm start -- sim` running)
import OpenAI from "openai";

const openai = new OpenAI({ baseURL: `${process.env.HERD ?? "http://localhost:11435"}/v1`, apiKey: "unused" });

const stream = await openai.chat.completions.create({
  model: "qwen2.5-coder:32b",
  messages: [{ role: "user", content: "write fizzbuzz" }],
  stream: true,
  stream_options: { include_usage: true },
});
for await (const chunk of stream) {
  process.stdout.write(chunk.choices[0]?.delta.content ?? "");
  if (chunk.usage) console.log(`\n(${chunk.usage.completion_tokens} tokens)`);
}
