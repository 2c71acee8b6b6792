// The web page in Debian's headless Chromium, driven by playwright-core: fill the form,
// generate, see the progress and the image with its parameters, see the job in the
// session's history, cancel a second job; screenshots go to BUILD/server-clients/.
"use strict";

const fs = require("node:fs");
const path = require("node:path");
const { clientsDir, requireClient, check, runWithServer } = require("./common.cjs");

const { chromium } = requireClient("playwright-core");
// The browser setup.sh found.
const executablePath = fs.readFileSync(path.join(clientsDir, "chromium.txt"), "utf8").trim();

runWithServer("web_page", async (server) => {
  const browser = await chromium.launch({
    executablePath, headless: true, args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"],
  });
  try {
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    const consoleErrors = [];
    page.on("console", (m) => { if (m.type() === "error") consoleErrors.push(m.text()); });
    page.on("pageerror", (e) => consoleErrors.push(String(e)));
    const outside = [];
    page.on("request", (r) => { if (!r.url().startsWith(server.base) && !r.url().startsWith("data:")) outside.push(r.url()); });

    await page.goto(server.base + "/");
    await page.waitForSelector("body[data-ready='true']", { timeout: 30000 });
    check(await page.title() === "sd-server", "the page loads");
    // The idle page: no image shown that is not one (the preview box stays hidden until a job
    // sends a preview), the prompt empty with its placeholder styled as a hint.
    const idleShot = path.join(clientsDir, "web_page_idle.png");
    await page.screenshot({ path: idleShot, fullPage: true });
    console.log("screenshot: " + idleShot);
    const shownImages = await page.$$eval("img", (imgs) => imgs
      .filter((img) => getComputedStyle(img).display !== "none" && img.getClientRects().length > 0)
      .map((img) => ({ id: img.id, ok: img.complete && img.naturalWidth > 0 })));
    check(shownImages.every((i) => i.ok), "the idle page shows no broken image",
          JSON.stringify(shownImages));
    check(await page.$eval("#preview", (img) => getComputedStyle(img).display) === "none",
          "the preview box is hidden while nothing is sampled");
    const prompt = await page.$eval("#prompt", (t) => ({
      value: t.value, placeholder: t.placeholder,
      text: getComputedStyle(t).color, hint: getComputedStyle(t, "::placeholder").color,
      hintStyle: getComputedStyle(t, "::placeholder").fontStyle }));
    check(prompt.value === "" && prompt.placeholder.startsWith("describe") &&
          prompt.hint !== prompt.text && prompt.hintStyle === "italic",
          "the placeholder reads as a hint, not a filled value", JSON.stringify(prompt));
    check(await page.textContent("#server-status") === "ready", "the idle badge says ready");
    check((await page.textContent("#model-name")) === "sd15_f16_seed1.safetensors",
          "the header names the model");
    const samplers = await page.$$eval("#sampler option", (os) => os.map((o) => o.value));
    check(samplers.includes("euler") && samplers.includes("dpm++2m"), "the sampler list is filled",
          samplers.join());

    await page.fill("#prompt", "a lovely cat");
    await page.fill("#negative_prompt", "blurry");
    await page.fill("#width", "64");
    await page.fill("#height", "64");
    await page.fill("#steps", "4");
    await page.fill("#cfg_scale", "1");
    await page.fill("#seed", "1234");
    await page.fill("#batch_count", "1");
    await page.selectOption("#sampler", "euler");
    await page.selectOption("#scheduler", "karras");
    await page.click("#generate");

    // Progress: the status shows the job generating, the bar moves, the text counts steps.
    await page.waitForFunction(() => {
      const s = document.getElementById("job-status").dataset.status;
      const v = document.getElementById("progress").value;
      return s === "generating" && v > 0 && v < 1;
    }, null, { timeout: 120000, polling: 50 });
    const progressText = await page.textContent("#progress-text");
    check(/^step \d+\/4/.test(progressText), "live progress is shown", progressText);
    await page.screenshot({ path: path.join(clientsDir, "web_page_progress.png"), fullPage: true });

    await page.waitForSelector("#results img.result-image", { timeout: 300000 });
    const status = await page.getAttribute("#job-status", "data-status");
    check(status === "completed", "the job completes", status);
    check(await page.getAttribute("#progress", "value") === "1" ||
          await page.$eval("#progress", (p) => p.value) === 1, "the bar is full");
    const image = await page.$eval("#results img.result-image", (img) => ({
      loaded: img.complete && img.naturalWidth > 0, w: img.naturalWidth, h: img.naturalHeight,
      alt: img.alt }));
    check(image.loaded && image.w === 64 && image.h === 64 && image.alt === "seed 1234",
          "the 64x64 image is shown", JSON.stringify(image));
    const parameters = await page.textContent("#results pre.parameters");
    check(/a lovely cat/.test(parameters) && /Seed: 1234/.test(parameters) &&
          /Steps: 4/.test(parameters), "its parameters are shown", parameters);
    const history = await page.$$eval("#history li", (lis) => lis.map((li) => li.textContent));
    check(history.length === 1 && /completed/.test(history[0]) && /a lovely cat/.test(history[0]),
          "the history lists the job", history.join(" | "));
    const shot = path.join(clientsDir, "web_page.png");
    await page.screenshot({ path: shot, fullPage: true });
    console.log("screenshot: " + shot);

    // A second job, cancelled from the page.
    await page.fill("#prompt", "a slow dog");
    await page.fill("#steps", "20");
    await page.click("#generate");
    await page.waitForFunction(() => !document.getElementById("cancel").disabled, null,
                               { timeout: 60000 });
    // The only job running: the badge says so, and no queue.
    await page.waitForFunction(
      () => document.getElementById("job-status").dataset.status === "generating", null,
      { timeout: 60000, polling: 20 });
    await page.waitForFunction(
      () => document.getElementById("server-status").textContent === "generating", null,
      { timeout: 4000, polling: 20 });
    await page.click("#cancel");
    await page.waitForFunction(
      () => document.getElementById("job-status").dataset.status === "cancelled", null,
      { timeout: 300000 });
    const rows = await page.$$eval("#history li", (lis) => lis.map((li) => li.textContent));
    check(rows.length === 2 && /cancelled/.test(rows[0]) && /completed/.test(rows[1]),
          "Cancel stops the job; the history shows both", rows.join(" | "));
    check(!(await page.isDisabled("#generate")), "the form is ready again");
    await page.screenshot({ path: path.join(clientsDir, "web_page_history.png"), fullPage: true });

    check(consoleErrors.length === 0, "no errors in the browser console", consoleErrors.join("\n"));
    check(outside.length === 0, "the page fetched nothing from elsewhere", outside.join(" "));
  } finally {
    await browser.close();
  }
}, ["--cfg-scale", "1", "--steps", "1"]);
