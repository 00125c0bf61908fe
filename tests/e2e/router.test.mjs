// cria serve in router mode (--models-dir with two models, --models-max 1)
// driven by the official OpenAI and Anthropic SDKs: each request's "model"
// picks the model (chat, completions, responses plain and streamed,
// embeddings), switching back and forth loads and unloads them in one
// process, and an unload is seen in GET /models.
// Expects CRIA_URL, CRIA_API_KEY, CRIA_MODEL_A and CRIA_MODEL_B (see scripts/e2e.sh).
import { test } from "node:test";
import assert from "node:assert/strict";
import OpenAI from "openai";
import Anthropic from "@anthropic-ai/sdk";

const url = process.env.CRIA_URL;
const key = process.env.CRIA_API_KEY;
const A = process.env.CRIA_MODEL_A;
const B = process.env.CRIA_MODEL_B;
assert.ok(url && key && A && B, "set CRIA_URL, CRIA_API_KEY, CRIA_MODEL_A and CRIA_MODEL_B");

const openai = new OpenAI({ baseURL: url + "/v1", apiKey: key, maxRetries: 0, timeout: 120_000 });
const anthropic = new Anthropic({ baseURL: url, apiKey: key, maxRetries: 0, timeout: 120_000 });

async function states() {
  const r = await fetch(url + "/models", { headers: { Authorization: "Bearer " + key } });
  assert.equal(r.status, 200);
  const body = await r.json();
  return Object.fromEntries(body.data.map((m) => [m.id, m.status.value]));
}

async function post(path, body) {
  const r = await fetch(url + path, {
    method: "POST", headers: { Authorization: "Bearer " + key, "Content-Type": "application/json" }, body: JSON.stringify(body),
  });
  return { status: r.status, body: await r.json() };
}

// Chat, completions and responses on one model; their texts.
async function useModel(model) {
  const chat = await openai.chat.completions.create({
    model, messages: [{ role: "user", content: "Tell me about Emma." }], max_tokens: 12, temperature: 0,
  });
  assert.equal(chat.model, model);
  assert.equal(chat.usage.completion_tokens, 12);
  const cmpl = await openai.completions.create({ model, prompt: "It is a truth universally", max_tokens: 8, temperature: 0 });
  assert.equal(cmpl.model, model);
  const resp = await openai.responses.create({ model, input: "Describe Bath.", max_output_tokens: 10, temperature: 0 });
  assert.equal(resp.model, model);
  assert.equal(resp.status, "incomplete");
  // The same response streamed (this SDK's finalResponse keeps an incomplete
  // reply's accumulated snapshot: read the message item).
  const stream = openai.responses.stream({ model, input: "Describe Bath.", max_output_tokens: 10, temperature: 0 });
  let streamedText = "";
  for await (const ev of stream) if (ev.type === "response.output_text.delta") streamedText += ev.delta;
  const streamed = await stream.finalResponse();
  assert.equal(streamed.model, model);
  assert.equal(streamedText, resp.output_text);
  assert.equal(streamed.output[0].content[0].text, resp.output_text);
  // Embeddings of the routed model (mean-pooled, L2-normalised).
  const emb = await openai.embeddings.create({ model, input: ["Pride", "Prejudice"], encoding_format: "float" });
  assert.equal(emb.model, model);
  assert.equal(emb.data.length, 2);
  assert.ok(Math.abs(Math.hypot(...emb.data[0].embedding) - 1) < 1e-3);
  return [chat.choices[0].message.content, cmpl.choices[0].text, resp.output_text, emb.data[0].embedding.slice(0, 8)];
}

let firstA;

test("router: models.list lists both models, none loaded yet", async () => {
  const page = await openai.models.list();
  assert.deepEqual(page.data.map((m) => m.id).sort(), [A, B].sort());
  assert.deepEqual(await states(), { [A]: "unloaded", [B]: "unloaded" });
});

test("router: chat, completions, responses (plain and streamed) and embeddings on model A load it", async () => {
  firstA = await useModel(A);
  assert.deepEqual(await states(), { [A]: "loaded", [B]: "unloaded" });
});

test("router: then on model B, which takes A's place (--models-max 1)", async () => {
  const b = await useModel(B);
  assert.notDeepEqual(b, firstA);
  assert.deepEqual(await states(), { [A]: "unloaded", [B]: "loaded" });
});

test("router: back on model A, the same greedy texts as before", async () => {
  assert.deepEqual(await useModel(A), firstA);
  assert.deepEqual(await states(), { [A]: "loaded", [B]: "unloaded" });
});

test("router: the Anthropic client on model B", async () => {
  const m = await anthropic.messages.create({ model: B, max_tokens: 8, temperature: 0, messages: [{ role: "user", content: "Begin." }] });
  assert.equal(m.model, B);
  assert.equal(m.usage.output_tokens, 8);
  const stream = anthropic.messages.stream({ model: B, max_tokens: 8, temperature: 0, messages: [{ role: "user", content: "Begin." }] });
  const final = await stream.finalMessage();
  assert.equal(final.content[0].text, m.content[0].text);
  assert.deepEqual(await states(), { [A]: "unloaded", [B]: "loaded" });
});

test("router: an unload is seen in GET /models, and the next request loads the model again", async () => {
  assert.deepEqual(await post("/models/unload", { model: B }), { status: 200, body: { success: true } });
  assert.deepEqual(await states(), { [A]: "unloaded", [B]: "unloaded" });
  const again = await openai.completions.create({ model: B, prompt: "It is", max_tokens: 4, temperature: 0 });
  assert.equal(again.model, B);
  assert.deepEqual(await states(), { [A]: "unloaded", [B]: "loaded" });
  assert.deepEqual(await post("/models/load", { model: A }), { status: 200, body: { success: true } });
  assert.deepEqual(await states(), { [A]: "loaded", [B]: "unloaded" });
});

test("router: an unknown model is a 404 in each SDK", async () => {
  await assert.rejects(openai.chat.completions.create({ model: "no-such-model", max_tokens: 2, messages: [{ role: "user", content: "x" }] }),
    (e) => e instanceof OpenAI.NotFoundError && e.status === 404 && /no-such-model/.test(e.message));
  await assert.rejects(anthropic.messages.create({ model: "no-such-model", max_tokens: 2, messages: [{ role: "user", content: "x" }] }),
    (e) => e instanceof Anthropic.NotFoundError && e.status === 404);
  await assert.rejects(openai.models.retrieve("no-such-model"), (e) => e instanceof OpenAI.NotFoundError);
});

test("router: the chat page picks the model from a list and sends it", async () => {
  const { chromium } = await import("playwright-core");
  const fs = await import("node:fs");
  const os = await import("node:os");
  const path = await import("node:path");
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), "cria-chromium-"));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: process.env.CHROMIUM || "/usr/bin/chromium", headless: true, timeout: 60_000,
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run"],
  });
  try {
    await context.addInitScript((k) => localStorage.setItem("cria.setting.api_key", k), key);
    const page = context.pages()[0] || await context.newPage();
    page.setDefaultTimeout(30_000);
    await page.goto(url + "/");
    await page.waitForFunction(() => document.querySelectorAll("#model-picker option").length === 2);
    assert.equal(await page.locator("#model-picker").isVisible(), true);
    assert.equal(await page.locator("#model-name").isVisible(), false);
    await page.selectOption("#model-picker", B);
    await page.click("#settings summary");  // open the sampling settings
    await page.fill("#max_tokens", "8");
    await page.dispatchEvent("#max_tokens", "change");
    await page.fill("#input", "Tell me about Mr Darcy.");
    await page.click("#send");
    await page.waitForFunction(() => {
      const b = [...document.querySelectorAll(".msg.assistant .body")].pop();
      return b && b.innerText.trim().length > 0 && document.querySelector("#send").disabled === false;
    });
    assert.equal((await states())[B], "loaded");
    // The list shows the new states once the reply is in.
    await page.waitForFunction((b) => [...document.querySelectorAll("#model-picker option")]
      .some((o) => o.value === b && o.textContent.includes("(loaded)")), B);
  } finally {
    await context.close();
    fs.rmSync(profile, { recursive: true, force: true });
  }
});
