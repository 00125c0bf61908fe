// cria serve with bert encoders (tools/mktinybert.py), driven by the official
// OpenAI SDK's embeddings.create and by fetch for /v1/rerank (no SDK has it).
// Expects CRIA_URL and CRIA_API_KEY, and ENCODER_KIND: "embedder" (mean
// pooling) or "reranker" (rank pooling, a classifier head). See scripts/e2e.sh.
import { test } from "node:test";
import assert from "node:assert/strict";
import OpenAI from "openai";

const url = process.env.CRIA_URL;
const key = process.env.CRIA_API_KEY;
const kind = process.env.ENCODER_KIND;
assert.ok(url && key && kind, "set CRIA_URL, CRIA_API_KEY and ENCODER_KIND");

const openai = new OpenAI({ baseURL: url + "/v1", apiKey: key, maxRetries: 0, timeout: 60_000 });
const post = (path, body) =>
  fetch(url + path, { method: "POST", headers: { "Content-Type": "application/json", Authorization: `Bearer ${key}` }, body: JSON.stringify(body) });

test("encoder: embeddings.create (float and base64), any model name", { skip: kind !== "embedder" }, async () => {
  const f = await openai.embeddings.create({ model: "whatever-the-app-says", input: ["the cat sat", "hello world", "the cat sat"], encoding_format: "float" });
  assert.equal(f.data.length, 3);
  assert.equal(f.data[0].embedding.length, 64);
  const norm = f.data[0].embedding.reduce((s, v) => s + v * v, 0);
  assert.ok(Math.abs(norm - 1) < 1e-4, `norm ${norm}`);
  assert.deepEqual(f.data[0].embedding, f.data[2].embedding);
  assert.notDeepEqual(f.data[0].embedding, f.data[1].embedding);
  const b = await openai.embeddings.create({ model: "x", input: "the cat sat" });  // the SDK asks for base64
  b.data[0].embedding.forEach((v, i) => assert.ok(Math.abs(v - f.data[0].embedding[i]) < 1e-6));
});

test("encoder: completions are refused with 501", { skip: kind !== "embedder" }, async () => {
  await assert.rejects(openai.completions.create({ model: "x", prompt: "hello", max_tokens: 2 }), (e) => e.status === 501);
});

test("encoder: /v1/rerank orders by relevance_score, top_n", { skip: kind !== "reranker" }, async () => {
  const documents = ["paris is the capital of france.", "the cat sat on the mat.", "hello world", "a dog"];
  const r = await post("/v1/rerank", { model: "x", query: "what is the capital of france?", documents, top_n: 3 });
  assert.equal(r.status, 200);
  const body = await r.json();
  assert.equal(body.results.length, 3);
  for (let i = 1; i < body.results.length; ++i) assert.ok(body.results[i - 1].relevance_score >= body.results[i].relevance_score);
  const all = await (await post("/rerank", { query: "what is the capital of france?", documents })).json();
  assert.deepEqual(all.results.slice(0, 3), body.results);
  assert.equal(new Set(all.results.map((x) => x.index)).size, documents.length);
});
