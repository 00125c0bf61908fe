// The chat page in headless Chromium: load it, send a message, see a
// streamed reply, press stop, and check that user text is never run as HTML.
// Expects CRIA_URL, CRIA_API_KEY, CRIA_MODEL and CHROMIUM (path to the browser).
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { chromium } from "playwright-core";

const url = process.env.CRIA_URL;
const key = process.env.CRIA_API_KEY;
const model = process.env.CRIA_MODEL;
const executablePath = process.env.CHROMIUM || "/usr/bin/chromium";

let browser, context, page, profile;

before(async () => {
  profile = fs.mkdtempSync(path.join(os.tmpdir(), "cria-chromium-"));
  context = await chromium.launchPersistentContext(profile, {
    executablePath,
    headless: true,
    timeout: 60_000,
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
           "--disable-sync", "--no-first-run"],
  });
  await context.addInitScript((k) => localStorage.setItem("cria.setting.api_key", k), key);
  page = context.pages()[0] || await context.newPage();
  page.setDefaultTimeout(15_000);
});

after(async () => {
  await context?.close();
  fs.rmSync(profile, { recursive: true, force: true });
});

async function assistantText() {
  return page.locator(".msg.assistant .body").last().innerText();
}

test("page loads and shows the model", async () => {
  await page.goto(url + "/");
  await page.waitForFunction((m) => document.getElementById("model-name").textContent === m, model);
  await page.click("#settings summary");  // open the sampling settings
});

test("a message gets a streamed reply with a speed", async () => {
  await page.fill("#max_tokens", "40");
  await page.dispatchEvent("#max_tokens", "change");
  await page.fill("#input", "Tell me about Mr Darcy.");
  await page.click("#send");
  await page.waitForFunction(() => {
    const b = [...document.querySelectorAll(".msg.assistant .body")].pop();
    return b && b.innerText.trim().length > 0 && document.querySelector("#send").disabled === false;
  });
  const text = await assistantText();
  assert.ok(text.trim().length > 0, "reply is empty");
  assert.match(await page.locator("#speed").innerText(), /tokens\/s/);
  assert.equal(await page.locator("#conversations li").count(), 1);
});

test("stop ends a long reply and frees the slot", async () => {
  await page.fill("#max_tokens", "100000");
  await page.dispatchEvent("#max_tokens", "change");
  await page.fill("#extra_json", '{"ignore_eos": true}');
  await page.dispatchEvent("#extra_json", "change");
  await page.fill("#input", "Write a very long letter.");
  await page.click("#send");
  await page.waitForFunction(() => {
    const b = [...document.querySelectorAll(".msg.assistant .body")].pop();
    return b && b.innerText.length > 30;
  });
  await page.click("#stop");
  await page.waitForFunction(() => document.querySelector("#send").disabled === false);
  const stopped = await assistantText();
  await page.waitForTimeout(500);
  assert.equal(await assistantText(), stopped, "text kept growing after stop");
  let free = false;
  for (let i = 0; i < 50 && !free; i++) {
    const slots = await (await fetch(url + "/slots", { headers: { Authorization: "Bearer " + key } })).json();
    free = slots.every((s) => !s.is_processing);
    if (!free) await new Promise((r) => setTimeout(r, 100));
  }
  assert.ok(free, "a slot is still busy after stop");
});

test("markdown is rendered and HTML in messages is escaped", async () => {
  await page.fill("#extra_json", "");
  await page.dispatchEvent("#extra_json", "change");
  await page.fill("#max_tokens", "4");
  await page.dispatchEvent("#max_tokens", "change");
  await page.click("#new-chat");
  assert.equal(await page.locator("#conversations li").count(), 2);
  await page.fill("#input", '<img src=x onerror="window.pwned=1"> **bold**');
  await page.click("#send");
  await page.waitForFunction(() => document.querySelector("#send").disabled === false);
  assert.equal(await page.locator(".msg img").count(), 0);
  assert.equal(await page.evaluate(() => window.pwned), undefined);
  const html = await page.evaluate(() => {
    const el = document.createElement("div");
    el.innerHTML = renderMarkdown("# T\n\n**b** `c<d>`\n\n```js\nlet x = '<b>';\n```\n- one\n- two\n[l](javascript:alert(1))");
    return el.innerHTML;
  });
  assert.match(html, /<h1>T<\/h1>/);
  assert.match(html, /<strong>b<\/strong>/);
  assert.match(html, /<code>c&lt;d&gt;<\/code>/);
  assert.match(html, /<pre><code class="language-js">let x = '&lt;b&gt;';<\/code><\/pre>/);
  assert.match(html, /<ul><li>one<\/li><li>two<\/li><\/ul>/);
  assert.doesNotMatch(html, /href="javascript/);
});

test("an attached image goes with the message and shows in the chat", async () => {
  await page.click("#new-chat");
  await page.setInputFiles("#image", new URL("../data/mmproj/img-a-96x64.png", import.meta.url).pathname);
  assert.equal(await page.locator("#attach-name").innerText(), "img-a-96x64.png");
  await page.fill("#input", "What is in this picture?");
  await page.click("#send");
  // The message shows before the reply starts; waiting only for #send to be
  // enabled again could pass before the click has disabled it.
  await page.locator(".msg.user img.attached").waitFor();
  await page.locator(".msg.assistant").last().waitFor();
  await page.waitForFunction(() => document.querySelector("#send").disabled === false);
  assert.equal(await page.locator(".msg.user img.attached").count(), 1);
  const src = await page.locator(".msg.user img.attached").getAttribute("src");
  assert.match(src, /^data:image\/png;base64,/);
  // The server took it (a projector is loaded): a reply, no error.
  assert.equal(await page.locator(".msg.assistant .error").count(), 0);
  assert.ok((await assistantText()).trim().length > 0);
  assert.equal(await page.locator("#attach-name").innerText(), "");
});
