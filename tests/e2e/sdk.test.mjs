// cria serve driven by the official OpenAI and Anthropic SDKs.
// Expects CRIA_URL (http://127.0.0.1:PORT), CRIA_API_KEY and CRIA_MODEL (see scripts/e2e.sh).
import { test } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import OpenAI from "openai";
import Anthropic from "@anthropic-ai/sdk";

const url = process.env.CRIA_URL;
const key = process.env.CRIA_API_KEY;
const model = process.env.CRIA_MODEL;
assert.ok(url && key && model, "set CRIA_URL, CRIA_API_KEY and CRIA_MODEL");

const openai = new OpenAI({ baseURL: url + "/v1", apiKey: key, maxRetries: 0, timeout: 60_000 });
const anthropic = new Anthropic({ baseURL: url, apiKey: key, maxRetries: 0, timeout: 60_000 });

const weatherTool = {
  type: "function",
  function: {
    name: "get_weather",
    description: "Weather in a city",
    parameters: { type: "object", properties: { city: { type: "string", enum: ["Bath", "London"] } }, required: ["city"] },
  },
};

test("openai: models.list names the served model", async () => {
  const page = await openai.models.list();
  assert.deepEqual(page.data.map((m) => m.id), [model]);
});

test("openai: chat completion", async () => {
  const r = await openai.chat.completions.create({
    model, messages: [{ role: "user", content: "Tell me about Emma." }], max_tokens: 16, temperature: 0,
  });
  assert.equal(r.object, "chat.completion");
  assert.equal(r.choices[0].message.role, "assistant");
  assert.ok(r.choices[0].message.content.length > 0);
  assert.equal(r.usage.completion_tokens, 16);
  assert.equal(r.choices[0].finish_reason, "length");
});

test("openai: streaming equals non-streaming, with usage", async () => {
  const params = { model, messages: [{ role: "user", content: "Describe Bath." }], max_tokens: 20, temperature: 0 };
  const whole = await openai.chat.completions.create(params);
  const stream = await openai.chat.completions.create({ ...params, stream: true, stream_options: { include_usage: true } });
  let text = "", usage = null, finish = null, chunks = 0;
  for await (const chunk of stream) {
    chunks++;
    if (chunk.usage) usage = chunk.usage;
    const c = chunk.choices[0];
    if (c?.delta?.content) text += c.delta.content;
    if (c?.finish_reason) finish = c.finish_reason;
  }
  assert.ok(chunks > 3);
  assert.equal(text, whole.choices[0].message.content);
  assert.equal(usage.completion_tokens, 20);
  assert.equal(finish, "length");
});

test("openai: logprobs and seed", async () => {
  const params = { model, messages: [{ role: "user", content: "Hello" }], max_tokens: 8, temperature: 1, seed: 42, logprobs: true, top_logprobs: 2 };
  const a = await openai.chat.completions.create(params);
  const b = await openai.chat.completions.create(params);
  assert.equal(a.choices[0].message.content, b.choices[0].message.content);
  const lp = a.choices[0].logprobs.content;
  assert.equal(lp.length, 8);
  for (const t of lp) { assert.ok(t.logprob <= 0); assert.equal(t.top_logprobs.length, 2); }
});

test("openai: tool call round trip", async () => {
  const messages = [{ role: "user", content: "What is the weather in Bath?" }];
  const first = await openai.chat.completions.create({ model, messages, tools: [weatherTool], tool_choice: "required", max_tokens: 300, temperature: 0 });
  const choice = first.choices[0];
  assert.equal(choice.finish_reason, "tool_calls");
  const call = choice.message.tool_calls[0];
  assert.equal(call.type, "function");
  assert.equal(call.function.name, "get_weather");
  const args = JSON.parse(call.function.arguments);
  assert.ok(["Bath", "London"].includes(args.city));
  messages.push(choice.message);
  messages.push({ role: "tool", tool_call_id: call.id, content: JSON.stringify({ forecast: "rain" }) });
  const second = await openai.chat.completions.create({ model, messages, tools: [weatherTool], max_tokens: 12, temperature: 0 });
  assert.equal(second.choices[0].message.role, "assistant");
  assert.ok(second.usage.prompt_tokens > first.usage.prompt_tokens);
});

test("openai: streamed tool call", async () => {
  const stream = await openai.chat.completions.create({
    model, messages: [{ role: "user", content: "Weather in London?" }], tools: [weatherTool],
    tool_choice: { type: "function", function: { name: "get_weather" } }, max_tokens: 300, temperature: 0, stream: true,
  });
  const calls = [];
  let finish = null;
  for await (const chunk of stream) {
    for (const t of chunk.choices[0]?.delta?.tool_calls ?? []) calls.push(t);
    if (chunk.choices[0]?.finish_reason) finish = chunk.choices[0].finish_reason;
  }
  assert.equal(finish, "tool_calls");
  assert.equal(calls[0].function.name, "get_weather");
  assert.ok(JSON.parse(calls[0].function.arguments).city);
});

test("openai: json_schema response format", async () => {
  const r = await openai.chat.completions.create({
    model, messages: [{ role: "user", content: "A person" }], max_tokens: 200, temperature: 0,
    response_format: { type: "json_schema", json_schema: { name: "p", schema: { type: "object", properties: { age: { type: "integer", minimum: 0, maximum: 120 } }, required: ["age"] } } },
  });
  const obj = JSON.parse(r.choices[0].message.content);
  assert.equal(typeof obj.age, "number");
});

test("openai: embeddings (float and the SDK's default base64)", async () => {
  const f = await openai.embeddings.create({ model, input: ["Pride", "Prejudice"], encoding_format: "float" });
  assert.equal(f.data.length, 2);
  const norm = f.data[0].embedding.reduce((s, v) => s + v * v, 0);
  assert.ok(Math.abs(norm - 1) < 1e-3);
  const b = await openai.embeddings.create({ model, input: "Pride" });
  assert.equal(b.data[0].embedding.length, f.data[0].embedding.length);
  b.data[0].embedding.forEach((v, i) => assert.ok(Math.abs(v - f.data[0].embedding[i]) < 1e-5));
});

test("openai: legacy completions", async () => {
  const r = await openai.completions.create({ model, prompt: "It is a truth universally", max_tokens: 6, temperature: 0 });
  assert.equal(r.object, "text_completion");
  assert.equal(r.usage.completion_tokens, 6);
});

test("openai: errors map to the SDK's error classes", async () => {
  // With one model loaded any name is served (as llama-server); looking up an unknown one is a 404.
  const any = await openai.chat.completions.create({ model: "no-such-model", max_tokens: 2, messages: [{ role: "user", content: "x" }] });
  assert.equal(any.model, model);
  await assert.rejects(openai.models.retrieve("no-such-model"), (e) => e instanceof OpenAI.NotFoundError && e.status === 404);
  await assert.rejects(openai.chat.completions.create({ model, messages: [{ role: "user", content: "x" }], temperature: "hot" }),
    (e) => e instanceof OpenAI.BadRequestError && /temperature/.test(e.message));
  await assert.rejects(openai.chat.completions.create({ model, messages: [] }), (e) => e instanceof OpenAI.BadRequestError);
  const wrong = new OpenAI({ baseURL: url + "/v1", apiKey: "wrong", maxRetries: 0 });
  await assert.rejects(wrong.models.list(), (e) => e instanceof OpenAI.AuthenticationError && e.status === 401);
});

test("openai: responses.create, a conversation by previous_response_id, tool call items", async () => {
  const first = await openai.responses.create({
    model: "gpt-4.1", instructions: "You are a helpful assistant.", input: "Tell me about Emma.", max_output_tokens: 16, temperature: 0,
  });
  assert.equal(first.object, "response");
  assert.equal(first.status, "incomplete");
  assert.equal(first.incomplete_details.reason, "max_output_tokens");
  assert.ok(first.output_text.length > 0);
  assert.equal(first.usage.output_tokens, 16);
  const second = await openai.responses.create({
    model: "gpt-4.1", previous_response_id: first.id, input: "And Bath?", max_output_tokens: 8, temperature: 0,
  });
  assert.equal(second.previous_response_id, first.id);
  assert.ok(second.usage.input_tokens > first.usage.output_tokens);  // "And Bath?" alone is fewer tokens: the first exchange is in the prompt
  const tools = [{ type: "function", name: "get_weather", description: "Weather in a city",
    parameters: weatherTool.function.parameters }];
  const call = await openai.responses.create({
    model, input: "What is the weather in Bath?", tools, tool_choice: "required", max_output_tokens: 300, temperature: 0,
  });
  const fc = call.output.find((o) => o.type === "function_call");
  assert.equal(fc.name, "get_weather");
  assert.ok(["Bath", "London"].includes(JSON.parse(fc.arguments).city));
  const answer = await openai.responses.create({
    model, previous_response_id: call.id, tools, max_output_tokens: 8, temperature: 0,
    input: [{ type: "function_call_output", call_id: fc.call_id, output: JSON.stringify({ forecast: "rain" }) }],
  });
  assert.equal(answer.output[0].type, "message");
  await assert.rejects(openai.responses.create({ model, input: "x", previous_response_id: "resp_missing" }),
    (e) => e instanceof OpenAI.NotFoundError);
});

test("openai: responses.stream events equal responses.create", async () => {
  const params = { model, input: "Describe Bath.", max_output_tokens: 20, temperature: 0 };
  const whole = await openai.responses.create(params);
  const stream = openai.responses.stream(params);
  const types = [];
  let text = "", last = -1, lastEvent = null;
  for await (const ev of stream) {
    types.push(ev.type);
    lastEvent = ev;
    assert.equal(ev.sequence_number, last + 1);
    last = ev.sequence_number;
    if (ev.type === "response.output_text.delta") text += ev.delta;
  }
  const final = await stream.finalResponse();
  assert.equal(text, whole.output_text);
  // This SDK's finalResponse() leaves output_text out, and takes the final
  // object only from response.completed (an incomplete one keeps the
  // accumulated snapshot): read the message item, and the status from the event.
  assert.equal(final.output[0].content[0].text, whole.output_text);
  assert.equal(lastEvent.response.status, "incomplete");
  assert.equal(lastEvent.response.usage.output_tokens, 20);
  assert.deepEqual(types.slice(0, 4), ["response.created", "response.in_progress", "response.output_item.added", "response.content_part.added"]);
  assert.deepEqual(types.slice(-4), ["response.output_text.done", "response.content_part.done", "response.output_item.done", "response.incomplete"]);
});

test("openai: responses.stream that completes gives finalResponse the completed object", async () => {
  // "stop" is llama-server's extra field (passed through by the SDK): the reply ends at the first "e".
  const stream = openai.responses.stream({ model, input: "Describe Bath.", max_output_tokens: 64, temperature: 0, stop: ["e"] });
  const final = await stream.finalResponse();
  assert.equal(final.status, "completed");
  assert.ok(final.usage.output_tokens < 64);
  assert.equal(final.output[0].type, "message");
});

test("anthropic: message", async () => {
  const m = await anthropic.messages.create({ model, max_tokens: 10, system: "You write like Austen.", messages: [{ role: "user", content: "Begin." }] });
  assert.equal(m.type, "message");
  assert.equal(m.role, "assistant");
  assert.equal(m.content[0].type, "text");
  assert.equal(m.stop_reason, "max_tokens");
  assert.equal(m.usage.output_tokens, 10);
});

test("anthropic: streaming events and final message", async () => {
  const stream = anthropic.messages.stream({ model, max_tokens: 12, temperature: 0, messages: [{ role: "user", content: "Begin." }] });
  const types = [];
  let text = "";
  stream.on("streamEvent", (e) => types.push(e.type));
  stream.on("text", (t) => { text += t; });
  const final = await stream.finalMessage();
  assert.equal(types[0], "message_start");
  assert.equal(types.at(-1), "message_stop");
  assert.ok(types.includes("content_block_delta"));
  assert.equal(final.content[0].text, text);
  assert.equal(final.usage.output_tokens, 12);
});

test("anthropic: tool_use round trip", async () => {
  const tools = [{ name: "get_weather", description: "Weather", input_schema: weatherTool.function.parameters }];
  const messages = [{ role: "user", content: "Weather in Bath?" }];
  const first = await anthropic.messages.create({ model, max_tokens: 300, temperature: 0, tools, tool_choice: { type: "any" }, messages });
  assert.equal(first.stop_reason, "tool_use");
  const use = first.content.find((b) => b.type === "tool_use");
  assert.equal(use.name, "get_weather");
  assert.ok(["Bath", "London"].includes(use.input.city));
  messages.push({ role: "assistant", content: first.content });
  messages.push({ role: "user", content: [{ type: "tool_result", tool_use_id: use.id, content: "rain" }] });
  const second = await anthropic.messages.create({ model, max_tokens: 8, temperature: 0, tools, messages });
  assert.equal(second.type, "message");
});

test("anthropic: errors", async () => {
  // Any model name is served by the one model loaded, which the reply names.
  const any = await anthropic.messages.create({ model: "claude-none", max_tokens: 2, messages: [{ role: "user", content: "x" }] });
  assert.equal(any.model, model);
  await assert.rejects(anthropic.messages.create({ model, max_tokens: 5, messages: [{ role: "wizard", content: "x" }] }),
    (e) => e instanceof Anthropic.BadRequestError);
  const wrong = new Anthropic({ baseURL: url, apiKey: "wrong", maxRetries: 0 });
  await assert.rejects(wrong.messages.create({ model, max_tokens: 5, messages: [{ role: "user", content: "x" }] }),
    (e) => e instanceof Anthropic.AuthenticationError && e.status === 401);
});

// Images: the server runs with a tiny gemma3 projector sized to the model
// (scripts/e2e.sh makes it with tools/mktinymmproj.py); 4 tokens per image.
const png = fs.readFileSync(new URL("../data/mmproj/img-a-96x64.png", import.meta.url)).toString("base64");
const pngUrl = "data:image/png;base64," + png;

test("openai: an image as a data: URL gets a completion and counts in usage", async () => {
  const ask = (content) => openai.chat.completions.create({ model, messages: [{ role: "user", content }], max_tokens: 8, temperature: 0 });
  const plain = await ask([{ type: "text", text: "Describe this." }]);
  const one = await ask([{ type: "text", text: "Describe this." }, { type: "image_url", image_url: { url: pngUrl } }]);
  const two = await ask([{ type: "image_url", image_url: { url: pngUrl } }, { type: "text", text: "Describe this." },
                         { type: "image_url", image_url: { url: pngUrl } }]);
  assert.equal(one.choices[0].message.role, "assistant");
  assert.ok(one.choices[0].message.content.length > 0);
  assert.ok(one.usage.prompt_tokens >= plain.usage.prompt_tokens + 4, JSON.stringify([plain.usage, one.usage]));
  assert.ok(two.usage.prompt_tokens >= one.usage.prompt_tokens + 4, JSON.stringify([one.usage, two.usage]));
});

test("openai: remote image URLs and non-images are refused with 400", async () => {
  const ask = (url) => openai.chat.completions.create({ model, max_tokens: 4,
    messages: [{ role: "user", content: [{ type: "image_url", image_url: { url } }] }] });
  await assert.rejects(ask("https://example.com/cat.png"), (e) => e instanceof OpenAI.BadRequestError && /data: URL/.test(e.message));
  await assert.rejects(ask("data:image/png;base64," + Buffer.from("no image here").toString("base64")),
    (e) => e instanceof OpenAI.BadRequestError);
  await assert.rejects(ask("data:image/png;base64,!!!"), (e) => e instanceof OpenAI.BadRequestError);
});

test("anthropic: a base64 image block gets a completion", async () => {
  const m = await anthropic.messages.create({ model, max_tokens: 8, temperature: 0, messages: [{ role: "user", content: [
    { type: "image", source: { type: "base64", media_type: "image/png", data: png } },
    { type: "text", text: "What is in the picture?" }] }] });
  assert.equal(m.type, "message");
  assert.ok(m.content[0].text.length > 0);
  assert.ok(m.usage.input_tokens >= 4);
});

test("all slots are free at the end", async () => {
  const r = await fetch(url + "/slots", { headers: { Authorization: "Bearer " + key } });
  const slots = await r.json();
  assert.ok(slots.length >= 1);
  for (const s of slots) assert.equal(s.is_processing, false);
});
