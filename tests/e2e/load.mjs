// Load test of cria serve on loopback (scripts/load_test.sh starts the
// server and runs this). For each level of concurrent clients (1, 2, 4, 8 by
// default), each client loops over streaming chat completions for a fixed
// time: a shared system prompt (so the prompt cache and prefix reuse have
// something to serve) and a varied user message, a fixed number of
// completion tokens. Measures per level: requests, errors, aggregate
// generated tokens/s (wall clock, and per server CPU second, which depends
// less on a shared machine's neighbours), p50/p99 time to first token, and
// the server's RSS (VmRSS sampled every second) min/max. Prints a table and
// one JSON line per level; exits nonzero on any error, slots left busy, or
// anonymous RSS still growing in the second half of the last level beyond the
// prompt cache's own growth (a leak or heap fragmentation: the drift check,
// at the end). Uses only Node's built-ins.
//
//   CRIA_URL=... [CRIA_API_KEY=...] [CRIA_PID=...] node load.mjs
//       [--seconds-per-level N] [--clients 1,2,4,8] [--max-tokens 64] [--abandon-every K]
// --abandon-every K: every K-th request of a client hangs up after 20 chunks
// (a disconnect under load; 0, the default: never).
import fs from "node:fs";

const url = process.env.CRIA_URL;
const key = process.env.CRIA_API_KEY || "";
const pid = process.env.CRIA_PID;
const headers = { "Content-Type": "application/json", ...(key ? { Authorization: "Bearer " + key } : {}) };

function option(name, fallback) {
  const i = process.argv.indexOf(name);
  return i >= 0 && i + 1 < process.argv.length ? process.argv[i + 1] : fallback;
}
const secondsPerLevel = Number(option("--seconds-per-level", 75));
const levels = option("--clients", "1,2,4,8").split(",").map(Number);
const maxTokens = Number(option("--max-tokens", 64));
const abandonEvery = Number(option("--abandon-every", 0));
if (!url || !(secondsPerLevel > 0) || levels.some((n) => !(n > 0)) || !(maxTokens > 0)) {
  console.error("usage: CRIA_URL=http://... node load.mjs [--seconds-per-level N] [--clients 1,2,4,8] [--max-tokens 64] [--abandon-every K]");
  process.exit(2);
}

// The shared system prompt: long enough that reusing its cells matters.
const SYSTEM = "You are a careful assistant for a small library. You answer questions about books, " +
  "authors and reading habits in plain words, in a few sentences, without lists. When you are not sure, " +
  "you say so. You never invent titles. The library opens at nine and closes at six, except on Sundays.";
const TOPICS = ["a rainy afternoon", "the sea", "an old letter", "a long journey", "a garden in winter",
  "a quarrel between sisters", "a country ball", "a proposal refused", "a walk to town", "an inheritance"];

function statusKiB(field) {
  if (!pid) return NaN;
  const m = fs.readFileSync(`/proc/${pid}/status`, "utf8").match(new RegExp(field + ":\\s+(\\d+)"));
  return m ? Number(m[1]) : NaN;
}
const rssKiB = () => statusKiB("VmRSS");
// The anonymous part of the RSS (heap, mappings, KV cache, packed weights):
// the drift check reads it, not VmRSS, whose file pages (the model file's
// page cache, mapped) come and go with the machine's other work.
const anonKiB = () => statusKiB("RssAnon");

// Server CPU seconds so far (utime + stime).
function cpuSeconds() {
  if (!pid) return NaN;
  const fields = fs.readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1].split(" ");
  return (Number(fields[11]) + Number(fields[12])) / 100;  // clock ticks (USER_HZ = 100)
}

// One streaming request: generated tokens (usage, or the chunks seen before
// hanging up) and the time to the first content chunk.
async function oneRequest(client, n, abandonAfter) {
  const controller = new AbortController();
  const body = {
    messages: [{ role: "system", content: SYSTEM },
               { role: "user", content: `Client ${client}, question ${n}: tell me about a novel with ${TOPICS[(client * 7 + n) % TOPICS.length]}.` }],
    max_tokens: maxTokens, ignore_eos: true, temperature: 0.8, seed: client * 100000 + n,
    stream: true, stream_options: { include_usage: true },
  };
  const t0 = performance.now();
  const r = await fetch(url + "/v1/chat/completions", { method: "POST", headers, body: JSON.stringify(body), signal: controller.signal });
  if (!r.ok) throw new Error("HTTP " + r.status + " " + (await r.text()));
  const reader = r.body.getReader();
  const decoder = new TextDecoder();
  let buffer = "", chunks = 0, usage = 0, ttft = NaN;
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += decoder.decode(value, { stream: true });
    let cut;
    while ((cut = buffer.indexOf("\n\n")) >= 0) {
      const data = buffer.slice(6, cut);
      buffer = buffer.slice(cut + 2);
      if (data === "[DONE]") continue;
      const j = JSON.parse(data);
      if (j.error) throw new Error(j.error.message);
      if (j.usage) usage = j.usage.completion_tokens;
      if (j.choices?.[0]?.delta?.content) {
        if (chunks === 0) ttft = performance.now() - t0;
        chunks++;
      }
    }
    if (abandonAfter && chunks >= abandonAfter) {
      controller.abort();
      await reader.cancel().catch(() => {});
      return { tokens: chunks, ttft, abandoned: true };
    }
  }
  return { tokens: usage, ttft, abandoned: false };
}

function percentile(sorted, p) {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
}

// RSS sampled every second over the whole run (and per level).
let rssSamples = [];
const sampler = setInterval(() => { const v = rssKiB(); if (!Number.isNaN(v)) rssSamples.push(v); }, 1000);

async function level(clients, seconds) {
  const end = Date.now() + seconds * 1000;
  let tokens = 0, requests = 0, abandoned = 0, errors = 0;
  const ttfts = [];
  const firstSample = rssSamples.length;
  const rssBefore = rssKiB();
  const cpuBefore = cpuSeconds();
  const started = Date.now();
  // Halfway: the RSS this level has reached (its buffers at working size)
  // and the prompt cache's size, for the leak check after the last level.
  const half = {};
  const halfway = setTimeout(async () => {
    half.anon_mib = anonKiB() / 1024;
    half.cache_mib = await promptCacheMiB().catch(() => 0);
  }, seconds * 500);
  await Promise.all(Array.from({ length: clients }, async (_, c) => {
    let n = 0;
    while (Date.now() < end) {
      n++;
      const abandon = abandonEvery > 0 && n % abandonEvery === 0 ? 20 : 0;
      try {
        const r = await oneRequest(c, n, abandon);
        tokens += r.tokens;
        requests++;
        if (!Number.isNaN(r.ttft)) ttfts.push(r.ttft);
        if (r.abandoned) abandoned++;
      } catch (e) {
        if (e.name !== "AbortError") { errors++; console.error("client", c, e.message); }
      }
    }
  }));
  clearTimeout(halfway);
  const elapsed = (Date.now() - started) / 1000;
  ttfts.sort((a, b) => a - b);
  const samples = [rssBefore, ...rssSamples.slice(firstSample), rssKiB()].filter((v) => !Number.isNaN(v));
  return { clients, seconds: Number(elapsed.toFixed(1)), requests, abandoned, errors, tokens,
           tokens_per_s: Number((tokens / elapsed).toFixed(1)),
           tokens_per_cpu_s: Number((tokens / (cpuSeconds() - cpuBefore)).toFixed(1)),
           ttft_p50_ms: Math.round(percentile(ttfts, 50)), ttft_p99_ms: Math.round(percentile(ttfts, 99)),
           rss_min_mib: samples.length ? Math.round(Math.min(...samples) / 1024) : NaN,
           rss_max_mib: samples.length ? Math.round(Math.max(...samples) / 1024) : NaN, half };
}

// The prompt cache's bytes (/metrics; 0 when the server has no --metrics):
// RSS that grows with them is the cache filling its budget, not a leak.
async function promptCacheMiB() {
  const r = await fetch(url + "/metrics", { headers });
  if (!r.ok) return 0;
  const m = (await r.text()).match(/^\S*prompt_cache_bytes\S*\s+(\S+)$/m);
  return m ? Number(m[1]) / (1 << 20) : 0;
}

async function slotsFree() {
  for (let i = 0; i < 100; i++) {
    const slots = await (await fetch(url + "/slots", { headers })).json();
    if (slots.every((s) => !s.is_processing)) return true;
    await new Promise((r) => setTimeout(r, 100));
  }
  return false;
}

const rssStart = rssKiB();
const results = [];
for (const clients of levels) {
  const r = await level(clients, secondsPerLevel);
  r.prompt_cache_mib = Math.round(await promptCacheMiB());
  results.push(r);
  const { half, ...shown } = r;
  console.log(JSON.stringify(shown));
}
clearInterval(sampler);
const free = await slotsFree();
const rssEnd = rssKiB();

const cols = ["clients", "requests", "errors", "tokens_per_s", "tokens_per_cpu_s", "ttft_p50_ms", "ttft_p99_ms", "rss_min_mib", "rss_max_mib", "prompt_cache_mib"];
const heads = ["clients", "requests", "errors", "tok/s", "tok/cpu-s", "TTFT p50 ms", "TTFT p99 ms", "RSS min MiB", "RSS max MiB", "cache MiB"];
const width = heads.map((h, i) => Math.max(h.length, ...results.map((r) => String(r[cols[i]]).length)));
const row = (cells) => cells.map((c, i) => String(c).padStart(width[i])).join("  ");
console.log(row(heads));
for (const r of results) console.log(row(cols.map((c) => r[c])));

const one = results.find((r) => r.clients === 1), four = results.find((r) => r.clients === 4);
const ratio = one && four ? Number((four.tokens_per_s / one.tokens_per_s).toFixed(2)) : null;
const errors = results.reduce((s, r) => s + r.errors, 0);
const allSamples = rssSamples.length ? rssSamples : [rssStart];
const summary = { slots_free: free, errors, ratio_4_to_1_clients: ratio,
                  rss_min_mib: Math.round(Math.min(...allSamples) / 1024), rss_max_mib: Math.round(Math.max(...allSamples) / 1024),
                  rss_start_mib: Math.round(rssStart / 1024), rss_end_mib: Math.round(rssEnd / 1024) };
console.log(JSON.stringify(summary));
if (ratio !== null) console.log(`4 clients / 1 client (aggregate tokens/s): ${ratio}x`);
// The drift check. Anonymous RSS grows while each level's buffers reach
// their working size and while the prompt cache fills (its bytes are
// subtracted); by the second half of the last level both are done, so what
// it still adds is a leak or heap growth (fragmentation). Checked: RssAnon at
// the end minus RssAnon halfway through the last level, minus the prompt
// cache's growth over the same time, under 64 MiB.
const last = results[results.length - 1];
let rssOk = true;
if (pid && last.half.anon_mib !== undefined && !Number.isNaN(last.half.anon_mib)) {
  const anonEnd = anonKiB() / 1024;
  const cacheGrowth = last.prompt_cache_mib - last.half.cache_mib;
  const drift = anonEnd - last.half.anon_mib - cacheGrowth;
  rssOk = drift < 64;
  console.log(`RSS drift check (anonymous RSS over the second half of the last level, less the prompt cache's growth; limit 64 MiB): ` +
              `${Math.round(anonEnd - last.half.anon_mib)} MiB - ${Math.round(cacheGrowth)} MiB = ${Math.round(drift)} MiB: ${rssOk ? "ok" : "FAILED"}`);
}
if (!free) console.error("slots still busy after the run");
process.exit(free && errors === 0 && rssOk ? 0 : 1);
