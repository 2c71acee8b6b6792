// The chaos soak of the Redis queue: redis-server (AOF, fsync always), two API nodes and two
// workers (-t 1, sd15 fixture, 64x64, one step), a client mix over the three APIs (native async
// jobs, some cancelled; webui and OpenAI synchronous requests, some dropped by the client;
// malformed and oversize bodies; LoRA tags) for SOAK_SECONDS (argv[2], default 300), while
// workers are SIGKILLed and restarted at random, Redis is restarted, and once stopped for 20 s.
// At the end every accepted job must be completed, failed with a reason, or cancelled, exactly
// once (the API nodes' accepted counts against Redis's outcome counts), no image may carry
// another request's seed or prompt, no client may see an error outside the fault windows nor a
// 5xx other than 503 inside them (Redis LOADING after a restart included), and every long-lived
// process's RSS must be flat after warm-up (slope printed; not judged against a sanitized
// sd-server, whose memory the sanitizer grows). Not in the default
// suite at full length: `node tests/soak/chaos_soak.cjs 3600` through ctest's environment, or
// `ctest -R server_chaos_soak` for the 5-minute run. Against a sanitized sd-server (SD_SERVER),
// SD_TEST_TIME_SCALE slows the faults and the waits by its factor (docs/building.md).
"use strict";

const fs = require("node:fs");
const http = require("node:http");
const os = require("node:os");
const path = require("node:path");
const { check, sleep, startServer, stopServer, request, decodePng, seedOf, fixturePath, vmRssKiB,
        failureCount, scaled } = require("../server/node/common.cjs");
const { freePort, startRedis, stopRedis } = require("../server/node/redis_helpers.cjs");

const DURATION_S = Number(process.argv[2] || process.env.SOAK_SECONDS || 300);
const CLIENTS = 3;          // concurrent client loops
const VISIBILITY_S = 3;     // --queue-visibility-timeout
// Under SD_TEST_TIME_SCALE (a sanitized server runs each job that many times slower) the fault
// rhythm slows with the jobs: a worker killed every 20-40 s would otherwise kill the same slow job
// again and again until the queue gives up on it as a poison job. The outage stays 20 s.
const GRACE_MS = scaled(20000);  // a fault's window reaches this far past its end
const WARMUP_MS = Math.min(120000, DURATION_S * 1000 * 0.25);
const rand = (n) => Math.floor(Math.random() * n);

// The sanitizer an sd-server binary is built with, or null. Under one its RSS is the
// sanitizer's: TSan's shadow and history and ASan's quarantine (up to 256 MiB) grow by
// themselves, so RSS is printed, not judged; the plain soak in the suite judges it.
function sanitizerOf(program) {
  const binary = fs.readFileSync(program);
  if (binary.includes("__tsan_init")) return "ThreadSanitizer";
  if (binary.includes("__asan_init")) return "AddressSanitizer";
  return null;
}

const faults = [];  // {kind, start, end}: a fault's window is [start, end + GRACE_MS]
const actions = [];  // {kind, start, end, ok, detail}
const rss = new Map();  // "role pid" -> [[t, KiB], ...]
const inFlight = new Map();  // client loop -> {kind, start}
let nonce = 0;

function inFaultWindow(start, end) {
  return faults.some((f) => start <= (f.end ?? Infinity) + GRACE_MS && end >= f.start);
}

// A request that may fail at the socket (Redis outages do not, but killed nodes would).
async function tryRequest(base, method, route, options) {
  try {
    return await request(base, method, route, options);
  } catch (e) {
    return { status: 0, text: String(e), json: undefined };
  }
}

// The image must carry this request's seed and prompt nonce.
function ownerCheck(png, seed, tag) {
  const params = png.text.parameters || "";
  return seedOf(params) === seed && params.includes(tag) ? null
    : `wrong owner: wanted seed ${seed} "${tag}", got ${params.slice(0, 120)}`;
}

// One client action on API node `a` (`b`: the other node); resolves to {ok, detail}.
async function nativeJob(a, b, { lora = false } = {}) {
  const seed = 100000 + rand(1e6), tag = `house n${++nonce}`;
  const prompt = `a small ${tag}` + (lora ? " <lora:kohya:0.6>" : "");
  const sub = await tryRequest(a, "POST", "/sdcpp/v1/img_gen",
                               { json: { prompt, seed, width: 64, height: 64 } });
  if (sub.status !== 202)
    return { ok: false, status: sub.status, detail: `submit ${sub.status} ${sub.text.slice(0, 160)}` };
  const cancelAfter = rand(10) < 3 ? rand(1500) : -1;
  const id = sub.json.id;
  const t0 = Date.now();
  let cancelled = false;
  for (;;) {
    if (cancelAfter >= 0 && !cancelled && Date.now() - t0 >= cancelAfter) {
      const c = await tryRequest(b, "POST", `/sdcpp/v1/jobs/${id}/cancel`);
      cancelled = c.status === 200 || c.status === 202 || c.status === 409;  // 202: asked of its worker
    }
    const r = await tryRequest(rand(2) ? a : b, "GET", "/sdcpp/v1/jobs/" + id);
    if (r.status === 200 && ["completed", "failed", "cancelled"].includes(r.json.status)) {
      const job = r.json;
      if (job.status === "failed")
        return { ok: !!(job.error && job.error.message), outcome: "failed",
                 detail: "failed: " + JSON.stringify(job.error) };
      if (job.status === "cancelled") return { ok: cancelled, outcome: "cancelled", detail: "cancelled" };
      const png = decodePng(Buffer.from(job.result.images[0].b64_json, "base64"));
      const wrong = ownerCheck(png, seed, tag);
      return { ok: !wrong, outcome: "completed", wrongOwner: !!wrong, detail: wrong || "completed" };
    }
    if (r.status !== 200 && r.status !== 503)
      return { ok: false, status: r.status, detail: `poll ${r.status} ${r.text.slice(0, 160)}` };
    if (Date.now() - t0 > scaled(600000))
      return { ok: false, detail: `job ${id} did not finish in ${scaled(600)} s` };
    await sleep(200);
  }
}

function syncBody(api, seed, tag, lora) {
  const prompt = `a small ${tag}` + (lora ? " <lora:kohya:0.6>" : "");
  return api === "sdapi"
    ? { route: "/sdapi/v1/txt2img", json: { prompt, seed, width: 64, height: 64 } }
    : { route: "/v1/images/generations",
        json: { prompt: `${prompt}<sd_cpp_extra_args>{"seed": ${seed}}</sd_cpp_extra_args>`,
                size: "64x64", n: 1, response_format: "b64_json" } };
}

async function syncRequest(a, api, { lora = false } = {}) {
  const seed = 100000 + rand(1e6), tag = `house n${++nonce}`;
  const { route, json } = syncBody(api, seed, tag, lora);
  const r = await tryRequest(a, "POST", route, { json });
  if (r.status !== 200) return { ok: false, status: r.status, detail: `${api} ${r.status} ${r.text.slice(0, 160)}` };
  const b64 = api === "sdapi" ? r.json.images[0] : r.json.data[0].b64_json;
  const wrong = ownerCheck(decodePng(Buffer.from(b64, "base64")), seed, tag);
  return { ok: !wrong, outcome: "completed", wrongOwner: !!wrong, detail: wrong || "completed" };
}

// A synchronous request the client drops after a while (the server cancels its job).
function droppedRequest(a, api) {
  const { route, json } = syncBody(api, 100000 + rand(1e6), `house n${++nonce}`, false);
  const url = new URL(a + route);
  const payload = Buffer.from(JSON.stringify(json));
  return new Promise((resolve) => {
    const req = http.request({ host: url.hostname, port: url.port, path: url.pathname, method: "POST",
      agent: false, headers: { "Content-Type": "application/json", "Content-Length": payload.length } },
    (res) => { res.resume(); res.on("end", () => resolve({ ok: true, detail: "answered before the drop" })); });
    req.on("error", () => resolve({ ok: true, detail: "dropped" }));
    req.end(payload);
    setTimeout(() => { req.destroy(); resolve({ ok: true, detail: "dropped" }); }, 100 + rand(1500));
  });
}

async function malformed(a) {
  const bodies = [["/sdcpp/v1/img_gen", "{\"prompt\": "], ["/v1/images/generations", "[1,2,3]"],
                  ["/sdapi/v1/txt2img", JSON.stringify({ prompt: "x", steps: "many" })],
                  ["/sdcpp/v1/img_gen", JSON.stringify({ prompt: "x", width: -64 })]];
  const [route, body] = bodies[rand(bodies.length)];
  const r = await tryRequest(a, "POST", route, { body, headers: { "Content-Type": "application/json" } });
  return { ok: r.status === 400 && r.json && r.json.error, detail: `malformed ${route}: ${r.status}` };
}

async function oversize(a) {
  const json = { prompt: "x".repeat(1536 << 10), seed: 1 };
  const r = await tryRequest(a, "POST", "/sdcpp/v1/img_gen", { json });
  return { ok: r.status === 413, detail: `oversize: ${r.status}` };
}

async function clientLoop(nodes, stopAt, loop) {
  while (Date.now() < stopAt) {
    const i = rand(2), a = nodes[i].base, b = nodes[1 - i].base;
    const pick = rand(100);
    const kind = pick < 25 ? "native" : pick < 42 ? "sdapi" : pick < 59 ? "openai" : pick < 69 ? "drop"
      : pick < 79 ? "malformed" : pick < 84 ? "oversize" : "lora";
    const start = Date.now();
    inFlight.set(loop, { kind, start });
    let result;
    try {
      result = kind === "native" ? await nativeJob(a, b)
        : kind === "sdapi" || kind === "openai" ? await syncRequest(a, kind)
        : kind === "drop" ? await droppedRequest(a, rand(2) ? "sdapi" : "openai")
        : kind === "malformed" ? await malformed(a)
        : kind === "oversize" ? await oversize(a)
        : rand(2) ? await nativeJob(a, b, { lora: true }) : await syncRequest(a, "sdapi", { lora: true });
    } catch (e) {
      result = { ok: false, detail: String(e && e.stack ? e.stack : e) };
    }
    actions.push({ kind, start, end: Date.now(), ...result });
  }
  inFlight.delete(loop);
}

// A line every 30 s: what ran, what failed, what each client waits on.
function progress(t0) {
  const waiting = [...inFlight.values()].map((a) => `${a.kind} ${((Date.now() - a.start) / 1000).toFixed(0)} s`);
  console.log(`[${((Date.now() - t0) / 1000).toFixed(0)} s] ${actions.length} actions, ` +
              `${actions.filter((a) => !a.ok).length} not ok, ${faults.length} faults; in flight: ${waiting.join(", ")}`);
}

function sampleRss(procs, redis) {
  const t = Date.now();
  const add = (key, pid) => {
    try {
      if (!rss.has(key)) rss.set(key, []);
      rss.get(key).push([t, vmRssKiB(pid)]);
    } catch (e) { /* exited meanwhile */ }
  };
  for (const p of procs) if (p.child.exitCode === null && p.child.signalCode === null) add(`${p.role} ${p.pid}`, p.pid);
  if (redis.current) add(`redis ${redis.current.child.pid}`, redis.current.child.pid);
}

// Least-squares slope of RSS after warm-up, MiB per hour, and the growth over that span.
function rssTrend(samples) {
  const t0 = samples[0][0];
  const s = samples.filter(([t]) => t - t0 >= WARMUP_MS);
  if (s.length < 6) return null;
  const n = s.length, mt = s.reduce((a, [t]) => a + t, 0) / n, mr = s.reduce((a, [, r]) => a + r, 0) / n;
  let num = 0, den = 0;
  for (const [t, r] of s) { num += (t - mt) * (r - mr); den += (t - mt) ** 2; }
  const slope = den ? (num / den) * 3600e3 / 1024 : 0;  // KiB/ms -> MiB/h
  const q = Math.max(1, Math.floor(n / 4));
  const median = (xs) => xs.map(([, r]) => r).sort((x, y) => x - y)[Math.floor(xs.length / 2)];
  const growth = (median(s.slice(-q)) - median(s.slice(0, q))) / 1024;
  return { slope, growth, minutes: (s[n - 1][0] - s[0][0]) / 60000, last: s[n - 1][1] / 1024 };
}

async function main() {
  const t0 = Date.now();
  const sanitizer = sanitizerOf(process.env.SD_SERVER);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "sd-soak-"));
  const loraDir = path.join(dir, "loras");
  fs.mkdirSync(loraDir);
  fs.symlinkSync(path.join(path.dirname(fixturePath()), "loras", "lora_sd15_kohya_seed7.safetensors"),
                 path.join(loraDir, "kohya.safetensors"));
  const port = await freePort();
  const redis = { current: null, down: false };
  const redisData = path.join(dir, "redis");
  fs.mkdirSync(redisData);
  const procs = [];
  const workers = [];
  let stats = {};
  let rssTimer, progressTimer;
  try {
    redis.current = await startRedis(port, redisData);
    const queue = ["--queue", `redis://127.0.0.1:${port}`, "--queue-visibility-timeout", String(VISIBILITY_S),
                   "--cfg-scale", "1", "--steps", "1", "--job-retention", String(DURATION_S + 1200),
                   "--max-body-size", "1", "--lora-model-dir", loraDir, "--max-queue-size", "256"];
    const startWorker = async () => {
      const w = await startServer([...queue, "--role", "worker", "-t", "1"], /worker (\S+) ready/);
      w.role = "worker";
      procs.push(w);
      workers.push(w);
      return w;
    };
    const nodes = await Promise.all([startServer([...queue, "--role", "api"]), startServer([...queue, "--role", "api"])]);
    for (const n of nodes) { n.role = "api"; procs.push(n); }
    await Promise.all([startWorker(), startWorker()]);
    console.log(`soak: ${DURATION_S} s, redis on ${port}, API ${nodes.map((n) => n.base).join(" ")}`);
    rssTimer = setInterval(() => sampleRss(procs, redis), 5000);

    const stopAt = Date.now() + DURATION_S * 1000;
    const clients = Array.from({ length: CLIENTS }, (_, i) => clientLoop(nodes, stopAt, i));
    progressTimer = setInterval(() => progress(t0), 30000);
    // Faults until the clients stop: a worker SIGKILLed every 20-40 s, Redis restarted every
    // 90-150 s (both times SD_TEST_TIME_SCALE), and once (at 40% of the run) Redis stopped for 20 s.
    const killIn = () => scaled(20000 + rand(20000)), restartIn = () => scaled(90000 + rand(60000));
    let nextKill = Date.now() + killIn(), nextRestart = Date.now() + restartIn();
    let outageDone = false;
    const outageAt = Date.now() + DURATION_S * 400;
    while (Date.now() < stopAt - 15000) {
      if (Date.now() >= nextKill) {
        const live = workers.filter((w) => w.child.exitCode === null && w.child.signalCode === null);
        const victim = live[rand(live.length)];
        const f = { kind: "worker killed", start: Date.now() };
        faults.push(f);
        console.log(`[${((Date.now() - t0) / 1000).toFixed(0)} s] SIGKILL worker ${victim.pid}`);
        victim.child.kill("SIGKILL");
        await victim.exited;
        await startWorker();
        f.end = Date.now() + VISIBILITY_S * 1000;
        nextKill = Date.now() + killIn();
      } else if (!outageDone && Date.now() >= outageAt) {
        const f = { kind: "redis stopped 20 s", start: Date.now() };
        faults.push(f);
        console.log(`[${((Date.now() - t0) / 1000).toFixed(0)} s] Redis stopped for 20 s`);
        await stopRedis(redis.current);
        redis.current = null;
        await sleep(20000);
        redis.current = await startRedis(port, redisData);
        f.end = Date.now();
        outageDone = true;
      } else if (Date.now() >= nextRestart) {
        const f = { kind: "redis restarted", start: Date.now() };
        faults.push(f);
        console.log(`[${((Date.now() - t0) / 1000).toFixed(0)} s] Redis restarted`);
        await stopRedis(redis.current);
        redis.current = await startRedis(port, redisData);
        f.end = Date.now();
        nextRestart = Date.now() + restartIn();
      }
      await sleep(500);
    }
    await Promise.all(clients);
    clearInterval(progressTimer);

    // Drain: nothing queued or generating, then the counts.
    const health = async (base) => (await tryRequest(base, "GET", "/health")).json;
    for (const deadline = Date.now() + scaled(180000); Date.now() < deadline; await sleep(500)) {
      const h = await health(nodes[0].base);
      if (h && h.queue && h.queue.queued === 0 && h.queue.generating === 0) break;
    }
    const [h0, h1] = [await health(nodes[0].base), await health(nodes[1].base)];
    const accepted = h0.jobs.accepted + h1.jobs.accepted;
    const finished = h0.jobs.completed + h0.jobs.failed + h0.jobs.cancelled;
    stats = { accepted, done: h0.jobs.completed, failed: h0.jobs.failed, cancelled: h0.jobs.cancelled,
              pending: h0.queue.queued + h0.queue.generating };
    sampleRss(procs, redis);
    clearInterval(rssTimer);

    const byKind = {};
    for (const a of actions) {
      const k = (byKind[a.kind] ||= { n: 0, ok: 0 });
      k.n++;
      if (a.ok) k.ok++;
    }
    const errors = actions.filter((a) => !a.ok);
    const outside = errors.filter((a) => !inFaultWindow(a.start, a.end));
    const wrongOwner = actions.filter((a) => a.wrongOwner).length;
    console.log("client actions: " + JSON.stringify(byKind));
    console.log("faults: " + ["worker killed", "redis restarted", "redis stopped 20 s"]
      .map((k) => `${k} x${faults.filter((f) => f.kind === k).length}`).join(", "));
    console.log(`jobs: accepted ${accepted}, done ${stats.done}, failed ${stats.failed}, ` +
                `cancelled ${stats.cancelled}, still pending ${stats.pending}`);
    console.log(`lost ${Math.max(0, accepted - finished)}, duplicated ${Math.max(0, finished - accepted)}, ` +
                `wrong-owner images ${wrongOwner}`);
    console.log(`client errors: ${errors.length} in fault windows or not, ${outside.length} outside`);
    const serverErrors = errors.filter((a) => a.status >= 500 && a.status !== 503);
    console.log(`server errors (5xx other than 503): ${serverErrors.length}`);
    for (const e of [...outside, ...serverErrors, ...errors].filter((e, i, all) => all.indexOf(e) === i).slice(0, 20))
      console.log(`  ${inFaultWindow(e.start, e.end) ? "in window " : "OUTSIDE   "} ${e.kind} at ` +
                  `${((e.start - t0) / 1000).toFixed(1)} s: ${String(e.detail).slice(0, 200)}`);
    check(stats.pending === 0, "every accepted job finished");
    check(accepted === finished, "accepted = done + failed + cancelled (none lost, none twice)",
          `${accepted} vs ${finished}`);
    check(wrongOwner === 0, "no image carries another request's seed or prompt");
    check(outside.length === 0, "no client error outside the fault windows");
    check(serverErrors.length === 0, "a fault reaches clients as 503 (retry), never as another 5xx");
    check(faults.some((f) => f.kind === "worker killed") && faults.some((f) => f.kind === "redis stopped 20 s"),
          "the faults were injected");
    for (const [key, samples] of rss) {
      const trend = rssTrend(samples);
      if (!trend) continue;
      console.log(`rss ${key}: ${trend.last.toFixed(1)} MiB, slope ${trend.slope.toFixed(2)} MiB/h ` +
                  `over ${trend.minutes.toFixed(1)} min after warm-up, growth ${trend.growth.toFixed(1)} MiB`);
      // API nodes live the whole run. A worker is killed within minutes, and its RSS follows the
      // request mix (a merged LoRA holds a copy of the weights it patches), so its line is
      // printed, not checked.
      if (key.startsWith("api") && !sanitizer)
        check(trend.growth < 8, `${key}: RSS flat after warm-up (grew < 8 MiB)`, `${trend.growth.toFixed(1)} MiB`);
    }
    if (sanitizer) console.log(`RSS not judged: sd-server is built with ${sanitizer} (its memory grows by itself)`);
  } catch (e) {
    check(false, "the soak ran to the end", e && e.stack ? e.stack : String(e));
  }
  clearInterval(rssTimer);
  clearInterval(progressTimer);
  for (const p of procs) if (p.child.exitCode === null && p.child.signalCode === null) await stopServer(p);
  if (redis.current) await stopRedis(redis.current);
  if (failureCount())
    for (const p of procs.slice(0, 4)) console.log(`--- ${p.role} ${p.pid} (last 2000 chars) ---\n` + p.log().slice(-2000));
  fs.rmSync(dir, { recursive: true, force: true });
  console.log(`chaos_soak: ${failureCount() ? failureCount() + " check(s) failed" : "all checks passed"} ` +
              `in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
  process.exit(failureCount() ? 1 : 0);
}

main();
