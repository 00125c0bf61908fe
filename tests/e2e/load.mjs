// Load test of cria serve on loopback: for 1, 2, 4 and 8 concurrent
// streaming clients, each for a fixed time, measures aggregate generated
// tokens/s; some requests are abandoned mid-stream (client disconnects).
// Checks: no request errors, all slots free afterwards, server RSS stable.
// Stops by itself. Usage:
//   CRIA_URL=... CRIA_API_KEY=... CRIA_PID=... node load.mjs [seconds-per-phase] [seconds-for-8]
import fs from "node:fs";

const url = process.env.CRIA_URL;
const key = process.env.CRIA_API_KEY || "";
const pid = process.env.CRIA_PID;
const phaseSeconds = Number(process.argv[2] || 15);
const lastSeconds = Number(process.argv[3] || 60);
const headers = { "Content-Type": "application/json", ...(key ? { Authorization: "Bearer " + key } : {}) };

function rssKiB() {
  if (!pid) return NaN;
  const m = fs.readFileSync(`/proc/${pid}/status`, "utf8").match(/VmRSS:\s+(\d+)/);
  return m ? Number(m[1]) : NaN;
}

// One streaming request; returns generated tokens (usage) or the tokens seen before abandoning it.
// Server CPU seconds so far (utime + stime), to read throughput per CPU
// second too: on a shared machine wall-clock figures depend on the neighbours.
function cpuSeconds() {
  if (!pid) return NaN;
  const fields = fs.readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1].split(" ");
  return (Number(fields[11]) + Number(fields[12])) / 100;  // clock ticks (USER_HZ = 100)
}

async function oneRequest(seed, abandonAfter) {
  const controller = new AbortController();
  const body = {
    messages: [{ role: "user", content: `Write chapter ${seed} of a novel.` }],
    max_tokens: 128, ignore_eos: true, temperature: 0.8, seed, stream: true, stream_options: { include_usage: true },
  };
  const r = await fetch(url + "/v1/chat/completions", { method: "POST", headers, body: JSON.stringify(body), signal: controller.signal });
  if (!r.ok) throw new Error("HTTP " + r.status + " " + (await r.text()));
  const reader = r.body.getReader();
  const decoder = new TextDecoder();
  let buffer = "", chunks = 0, usage = 0;
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
      if (j.choices?.[0]?.delta?.content) chunks++;
    }
    if (abandonAfter && chunks >= abandonAfter) {
      controller.abort();
      await reader.cancel().catch(() => {});
      return { tokens: chunks, abandoned: true };
    }
  }
  return { tokens: usage, abandoned: false };
}

async function phase(clients, seconds) {
  const end = Date.now() + seconds * 1000;
  let tokens = 0, requests = 0, abandoned = 0, errors = 0;
  const rssBefore = rssKiB();
  const cpuBefore = cpuSeconds();
  const started = Date.now();
  await Promise.all(Array.from({ length: clients }, async (_, c) => {
    let n = 0;
    while (Date.now() < end) {
      n++;
      const abandon = n % 5 === 0 ? 20 : 0;  // every fifth request hangs up early
      try {
        const r = await oneRequest(c * 100000 + n, abandon);
        tokens += r.tokens;
        requests++;
        if (r.abandoned) abandoned++;
      } catch (e) {
        if (e.name !== "AbortError") { errors++; console.error("client", c, e.message); }
      }
    }
  }));
  const elapsed = (Date.now() - started) / 1000;
  return { clients, seconds: Number(elapsed.toFixed(1)), requests, abandoned, errors, tokens,
           tokens_per_s: Number((tokens / elapsed).toFixed(1)),
           tokens_per_cpu_s: Number((tokens / (cpuSeconds() - cpuBefore)).toFixed(1)), rss_kib_before: rssBefore, rss_kib_after: rssKiB() };
}

async function slotsFree() {
  for (let i = 0; i < 100; i++) {
    const slots = await (await fetch(url + "/slots", { headers })).json();
    if (slots.every((s) => !s.is_processing)) return true;
    await new Promise((r) => setTimeout(r, 100));
  }
  return false;
}

const results = [];
for (const clients of [1, 2, 4, 8]) {
  const r = await phase(clients, clients === 8 ? lastSeconds : phaseSeconds);
  results.push(r);
  console.log(JSON.stringify(r));
}
const free = await slotsFree();
const rssStart = results[0].rss_kib_before, rssEnd = rssKiB();
const speedup4 = results[2].tokens_per_s / results[0].tokens_per_s;
const errors = results.reduce((s, r) => s + r.errors, 0);
const summary = { slots_free: free, rss_kib_start: rssStart, rss_kib_end: rssEnd, speedup_4_vs_1: Number(speedup4.toFixed(2)), errors };
console.log(JSON.stringify(summary));
// RSS may grow once while buffers reach their working size; more than 64 MiB after that is a leak.
const rssOk = !pid || (rssEnd - results[1].rss_kib_before) < 64 * 1024;
process.exit(free && errors === 0 && rssOk ? 0 : 1);
