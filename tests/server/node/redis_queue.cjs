// sd-server across processes through a Redis queue (--queue): its own redis-server on a
// loopback port (AOF on), two API nodes (A takes the requests, B polls and cancels) and two
// workers (-t 1). 20 jobs over the three APIs; a queued and a generating job cancelled from
// B; the worker running a job SIGKILLed (the job is taken over after the visibility timeout
// and finished by another worker; a fresh worker joins); Redis stopped and restarted while
// jobs wait (503 JSON meanwhile). Every job must end completed or cancelled exactly once,
// each image carrying its own request's seed, none lost.
"use strict";

const { spawn } = require("node:child_process");
const fs = require("node:fs");
const os = require("node:os");
const path = require("node:path");
const { check, sleep, startServer, stopServer, request, decodePng, seedOf, failureCount, scaled } =
  require("./common.cjs");
const { freePort, startRedis, stopRedis } = require("./redis_helpers.cjs");

const COUNT = 20;
const SEED0 = 3000;
const APIS = ["sdcpp", "sdapi", "openai"];
const KILLED = 0;        // native, long: its worker is SIGKILLed while it runs it
const CANCEL_RUNNING = 6;  // native, long: cancelled from B while it generates
const CANCEL_QUEUED = 3;   // native: cancelled from B while both workers are busy
const LONG_STEPS = { [KILLED]: 6, [CANCEL_RUNNING]: 40 };
const PIXEL_CHECKED = [1, 2, 4];  // also rendered alone first

// A native job's status through `base`, tolerating Redis outages (503).
async function jobStatus(base, id) {
  const r = await request(base, "GET", "/sdcpp/v1/jobs/" + id);
  return r.status === 200 ? r.json : { status: "http " + r.status, http: r.status };
}

async function waitNative(base, id, timeoutMs = scaled(240000)) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const job = await jobStatus(base, id);
    if (["completed", "failed", "cancelled"].includes(job.status)) return job;
    if (job.http && job.http !== 503) return job;
    if (Date.now() > deadline) return { status: "timed out (" + job.status + ")" };
    await sleep(150);
  }
}

function submitNative(a, i, steps) {
  const json = { prompt: "a small house", seed: SEED0 + i, width: 64, height: 64 };
  if (steps) json.sample_params = { sample_steps: steps };
  return request(a, "POST", "/sdcpp/v1/img_gen", { json });
}

// One synchronous request (webui or OpenAI) on A; resolves to its outcome.
async function syncRequest(a, i) {
  const seed = SEED0 + i;
  const r = APIS[i % 3] === "sdapi"
    ? await request(a, "POST", "/sdapi/v1/txt2img",
                    { json: { prompt: "a small house", seed, width: 64, height: 64 } })
    : await request(a, "POST", "/v1/images/generations", {
        json: { prompt: `a small house<sd_cpp_extra_args>{"seed": ${seed}}</sd_cpp_extra_args>`,
                size: "64x64", n: 1, response_format: "b64_json" } });
  if (r.status !== 200) return { i, outcome: `HTTP ${r.status} ${r.text.slice(0, 200)}` };
  const sdapi = APIS[i % 3] === "sdapi";
  const b64 = sdapi ? r.json.images[0] : r.json.data[0].b64_json;
  return { i, outcome: "completed", reportedSeed: sdapi ? JSON.parse(r.json.info).all_seeds[0] : seed,
           png: decodePng(Buffer.from(b64, "base64")) };
}

// A native job submitted on A, followed on B.
async function nativeRequest(a, b, i) {
  const submit = await submitNative(a, i, LONG_STEPS[i]);
  if (submit.status !== 202) return { i, outcome: "refused " + submit.status + " " + submit.text };
  return followNative(b, i, submit.json.id);
}

async function followNative(b, i, id) {
  const job = await waitNative(b, id);
  if (job.status !== "completed") return { i, id, outcome: job.status };
  const image = job.result.images[0];
  return { i, id, outcome: "completed", reportedSeed: image.seed,
           png: decodePng(Buffer.from(image.b64_json, "base64")) };
}

const health = async (base) => (await request(base, "GET", "/health")).json;

async function main() {
  const t0 = Date.now();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "sd-redis-"));
  const port = await freePort();
  const procs = [];
  let redis;
  try {
    redis = await startRedis(port, dir);
    const queue = ["--queue", `redis://127.0.0.1:${port}`, "--queue-visibility-timeout", "3",
                   "--cfg-scale", "1", "--steps", "1"];
    // Unreachable Redis at start: a clear message and exit != 0.
    const unreachable = spawn(process.env.SD_SERVER, ["-m", "x.safetensors", "--role", "api",
      "--queue", `redis://127.0.0.1:${await freePort()}`], { stdio: ["ignore", "pipe", "pipe"] });
    let badLog = "";
    unreachable.stderr.on("data", (d) => { badLog += d; });
    unreachable.stdout.on("data", (d) => { badLog += d; });
    const badCode = await new Promise((resolve) => unreachable.on("exit", resolve));
    check(badCode !== 0 && /cannot use Redis.*Connection refused/.test(badLog),
          "Redis unreachable at start: a clear message and exit != 0", `${badCode} ${badLog.trim()}`);

    const startWorker = async () => {
      const w = await startServer([...queue, "--role", "worker", "-t", "1"], /worker (\S+) ready/);
      w.name = /worker (\S+) ready/.exec(w.log())[1];
      procs.push(w);
      return w;
    };
    const [A, B, W1, W2] = await Promise.all([
      startServer([...queue, "--role", "api"]), startServer([...queue, "--role", "api"]),
      startWorker(), startWorker()]);
    procs.push(A, B);
    const a = A.base, b = B.base;
    console.log(`redis on ${port}; API A ${a}, API B ${b}; workers ${W1.name}, ${W2.name}`);
    for (let h = await health(a); h.cluster.workers.length < 2; h = await health(a)) await sleep(100);
    check(true, "/health lists both workers");

    // Renders alone, before the load, for the pixel check.
    const alone = {};
    for (const i of PIXEL_CHECKED) {
      const r = APIS[i % 3] === "sdcpp" ? await nativeRequest(a, b, i) : await syncRequest(a, i);
      if (r.outcome !== "completed") throw new Error(`render #${i} alone: ${r.outcome}`);
      alone[i] = r.png;
    }
    const before = (await health(a)).jobs;

    // Two long native jobs occupy both workers; #3 then waits and is cancelled from B.
    const results = new Array(COUNT);
    const subKilled = await submitNative(a, KILLED, LONG_STEPS[KILLED]);
    const subRunning = await submitNative(a, CANCEL_RUNNING, LONG_STEPS[CANCEL_RUNNING]);
    const idKilled = subKilled.json.id, idRunning = subRunning.json.id;
    const busy = async () => {
      const ws = (await health(a)).cluster.workers;
      return [idKilled, idRunning].every((id) => ws.some((w) => w.job === id));
    };
    for (let k = 0; k < 400 && !(await busy()); k++) await sleep(50);
    check(await busy(), "each worker runs one of the two long jobs");
    const subQueued = await submitNative(a, CANCEL_QUEUED);
    const cancelQueued = await request(b, "POST", `/sdcpp/v1/jobs/${subQueued.json.id}/cancel`);
    check(cancelQueued.status === 200 && cancelQueued.json.status === "cancelled",
          "a queued job submitted on A is cancelled from B at once", cancelQueued.text.slice(0, 200));
    results[CANCEL_QUEUED] = { i: CANCEL_QUEUED, id: subQueued.json.id,
                               outcome: (await jobStatus(a, subQueued.json.id)).status };

    // The worker running #0 is killed; #6 is cancelled from B while it generates.
    const workers = (await health(a)).cluster.workers;
    const victim = [W1, W2].find((w) => workers.some((x) => x.name === w.name && x.job === idKilled));
    victim.child.kill("SIGKILL");
    console.log(`SIGKILLed worker ${victim.name} while it ran ${idKilled}`);
    const tCancel = Date.now();
    const cancelRunning = await request(b, "POST", `/sdcpp/v1/jobs/${idRunning}/cancel`);
    check(cancelRunning.status === 202, "cancel of a generating job from B: 202",
          cancelRunning.status + " " + cancelRunning.text.slice(0, 200));
    const runner = [W1, W2].find((w) => w !== victim);
    const reached = () => runner.log().includes(`cancelling job ${idRunning}`);
    while (!reached() && Date.now() - tCancel < 10000) await sleep(20);
    const reachMs = Date.now() - tCancel;
    let running = await jobStatus(b, idRunning);
    while (running.status === "generating" && Date.now() - tCancel < scaled(60000)) {
      await sleep(50);
      running = await jobStatus(b, idRunning);
    }
    const endMs = Date.now() - tCancel;
    console.log(`cancel of the generating job: reached its worker after ${reachMs} ms, ` +
                `the job ended ${running.status} after ${endMs} ms (at its next sampling step)`);
    check(reached() && reachMs < 2000, "the cancel reaches the worker within 2 s", `${reachMs} ms`);
    check(running.status === "cancelled", "the job ends cancelled", running.status);
    results[CANCEL_RUNNING] = { i: CANCEL_RUNNING, id: idRunning, outcome: running.status };
    const killedFollow = followNative(b, KILLED, idKilled);
    const W3 = await startWorker();
    console.log(`worker ${W3.name} joined`);

    // The rest, all at once; Redis goes away while they wait.
    const pending = [];
    for (let i = 0; i < COUNT; i++) {
      if (i === KILLED || i === CANCEL_RUNNING || i === CANCEL_QUEUED) continue;
      pending.push(APIS[i % 3] === "sdcpp" ? nativeRequest(a, b, i) : syncRequest(a, i));
      await sleep(20);
    }
    for (let h = await health(a); h.jobs.completed - before.completed < 3; h = await health(a))
      await sleep(100);
    const queuedBefore = (await health(a)).queue.queued;
    await stopRedis(redis);
    console.log(`Redis stopped with ${queuedBefore} jobs queued`);
    const hDown = await request(a, "GET", "/health");
    const submitDown = await submitNative(a, 99);
    const pollDown = await request(b, "GET", "/sdcpp/v1/jobs/" + idKilled);
    const is503 = (r) => r.status === 503 && r.json && r.json.error &&
                         r.json.error.code === "queue_unavailable";
    check(is503(hDown) && is503(submitDown) && is503(pollDown),
          "while Redis is away: /health, submit and poll answer 503 JSON (queue_unavailable)",
          [hDown, submitDown, pollDown].map((r) => r.status + " " + r.text.slice(0, 120)).join(" | "));
    await sleep(2000);
    redis = await startRedis(port, dir);
    console.log("Redis restarted");

    for (const r of await Promise.all([...pending, killedFollow])) results[r.i] = r;
    const seconds = (Date.now() - t0) / 1000;

    const completed = results.filter((r) => r.outcome === "completed");
    const cancelled = results.filter((r) => r.outcome === "cancelled");
    const other = results.filter((r) => r.outcome !== "completed" && r.outcome !== "cancelled");
    console.log(`${COUNT} jobs: ${completed.length} completed, ${cancelled.length} cancelled, ` +
                `${seconds.toFixed(1)} s since the start`);
    check(other.length === 0 && results.every((r) => r),
          "every job ends completed or cancelled, none lost",
          other.map((r) => `#${r.i}: ${r.outcome}`).join("; "));
    check(results[KILLED].outcome === "completed",
          "the killed worker's job is finished by another worker", results[KILLED].outcome);
    const tookOver = procs.filter((p) => p.log().includes("took over job " + idKilled));
    check(tookOver.length === 1, "one worker took the killed worker's job over",
          `${tookOver.length}: ${tookOver.map((p) => p.name).join(", ")}`);
    check(cancelled.length === 2, "exactly the two cancelled jobs are cancelled",
          cancelled.map((r) => "#" + r.i).join());
    const h = await health(a);
    const delta = (k) => h.jobs[k] - before[k];
    check(delta("completed") === completed.length && delta("cancelled") === cancelled.length &&
          delta("failed") === 0, "Redis counted each outcome once (none twice, none failed)",
          JSON.stringify({ before, after: h.jobs }));
    check(h.queue.queued === 0 && h.queue.generating === 0, "the queue is empty afterwards",
          JSON.stringify(h.queue));

    const wrongSeed = completed.filter((r) => r.reportedSeed !== SEED0 + r.i ||
                                               seedOf(r.png.text.parameters) !== SEED0 + r.i);
    check(wrongSeed.length === 0, "each image carries its own request's seed",
          wrongSeed.map((r) => `#${r.i} got ${seedOf(r.png.text.parameters)}`).join());
    const distinct = new Set(completed.map((r) => r.png.pixels.toString("base64")));
    check(distinct.size === completed.length, "no two jobs got the same image");
    for (const i of PIXEL_CHECKED)
      check(results[i].outcome === "completed" && results[i].png.pixels.equals(alone[i].pixels),
            `#${i} (${APIS[i % 3]}) is pixel for pixel its render alone`);
  } catch (e) {
    check(false, "redis_queue ran to the end", e && e.stack ? e.stack : String(e));
  }
  for (const p of procs) if (p.child.exitCode === null && p.child.signalCode === null) await stopServer(p);
  if (redis) await stopRedis(redis);
  fs.rmSync(dir, { recursive: true, force: true });
  if (failureCount()) {
    for (const p of procs) console.log(`--- log of pid ${p.pid} (last 3000 chars) ---\n` + p.log().slice(-3000));
    if (redis) console.log("--- redis-server log ---\n" + redis.log().slice(-2000));
  }
  console.log(`redis_queue: ${failureCount() ? failureCount() + " check(s) failed" : "all checks passed"} ` +
              `in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
  process.exit(failureCount() ? 1 : 0);
}

main();
