// herd with the official Ollama client: point its host at the router.
// Run: npx bun examples/clients/ollama-sdk.ts   (with `npm start -- sim` running)
import { Ollama } from "ollama";

const ollama = new Ollama({ host: process.env.HERD ?? "http://localhost:11435" });

const { models } = await ollama.list();
console.log("the fleet has:", models.map((m) => m.name).join(", "));

for await (const part of await ollama.chat({ model: "llama3.2:3b", messages: [{ role: "user", content: "hello" }], stream: true })) {
  process.stdout.write(part.message.content);
}
console.log();
