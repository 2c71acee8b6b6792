// The Redis job queue's figures on the sd15 fixture at 64x64 (one step, CFG 1): jobs per
// minute with one and with two workers (-t 1 each; JOBS native jobs submitted at once),
// and the latency the queue path adds to a job against the in-process server (the mean of
// client time minus the model runner's time over SEQ sequential webui requests in each mode).
//   SD_SERVER=build/tools/server/sd-server SD_BUILD_DIR=build SD_FIXTURES_DIR=../shared/fixtures \
//     node bench/redis_queue_bench.cjs   [JOBS=16 SEQ=10 THREADS=1]
// (build/server-clients/fixture.txt must exist: ctest -R server_client_setup writes it.)
"use strict";

const fs = require("node:fs");
const os = require("node:os");
const path = require("node:path");
const node = path.join(__dirname, "..", "tests", "server", "node");
const { sleep, startServer, stopServer, request } = require(path.join(node, "common.cjs"));
const { freePort, startRedis, stopRedis } = require(path.join(node, "redis_helpers.cjs"));

const JOBS = Number(process.env.JOBS || 16);
const SEQ = Number(process.env.SEQ || 10);
const THREADS = process.env.THREADS || "1";
const BASE_ARGS = ["--cfg-scale", "1", "--steps", "1", "-t", THREADS];

// Milliseconds of the jobs a worker ran after `from` (its "job ran in X ms" lines: the
// model runner's whole run, generation and encoding).
function engineMs(log, from) {
  return [...log.slice(from).matchAll(/job ran in ([0-9.]+) ms/g)].map((m) => Number(m[1]));
}

// SEQ webui requests one after another; the mean of (client ms - engine ms).
async function overheadMs(api, worker, label) {
  await request(api.base, "POST", "/sdapi/v1/txt2img", { json: { prompt: "warm up", seed: 1 } });
  const from = worker.log().length;
  const client = [];
  for (let i = 0; i < SEQ; i++) {
    const r = await request(api.base, "POST", "/sdapi/v1/txt2img",
                            { json: { prompt: "a small house", seed: 100 + i } });
    if (r.status !== 200) throw new Error(`${label}: HTTP ${r.status} ${r.text}`);
    client.push(r.ms);
  }
  await sleep(200);
  const engine = engineMs(worker.log(), from);
  if (engine.length !== SEQ) throw new Error(`${label}: ${engine.length} engine times logged`);
  const over = client.map((c, i) => c - engine[i]);
  const mean = (a) => a.reduce((x, y) => x + y, 0) / a.length;
  console.log(`${label}: client ${mean(client).toFixed(0)} ms, engine ${mean(engine).toFixed(0)} ms, ` +
              `outside the engine ${mean(over).toFixed(1)} ms a job (min ${Math.min(...over).toFixed(1)})`);
  return mean(over);
}

// JOBS native jobs at once through `api`; jobs per minute.
async function throughput(api, label) {
  const t0 = Date.now();
  const ids = [];
  for (let i = 0; i < JOBS; i++) {
    const r = await request(api.base, "POST", "/sdcpp/v1/img_gen",
                            { json: { prompt: "a small house", seed: 500 + i } });
    if (r.status !== 202) throw new Error(`${label}: HTTP ${r.status} ${r.text}`);
    ids.push(r.json.id);
  }
  for (const id of ids) {
    for (;;) {
      const r = await request(api.base, "GET", "/sdcpp/v1/jobs/" + id);
      if (r.json.status === "completed") break;
      if (r.json.status !== "queued" && r.json.status !== "generating")
        throw new Error(`${label}: job ${id} ${r.json.status}`);
      await sleep(100);
    }
  }
  const perMinute = JOBS / ((Date.now() - t0) / 60000);
  console.log(`${label}: ${JOBS} jobs in ${((Date.now() - t0) / 1000).toFixed(1)} s = ` +
              `${perMinute.toFixed(1)} jobs/min`);
  return perMinute;
}

async function main() {
  console.log(`load average before: ${os.loadavg().map((l) => l.toFixed(2)).join(" ")}`);
  const local = await startServer(BASE_ARGS);
  const inProcess = await overheadMs(local, local, "in process");
  await stopServer(local);

  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "sd-redis-bench-"));
  const port = await freePort();
  const redis = await startRedis(port, dir, ["--appendfsync", "everysec"]);
  const queue = ["--queue", `redis://127.0.0.1:${port}`, ...BASE_ARGS];
  const api = await startServer([...queue, "--role", "api"]);
  const w1 = await startServer([...queue, "--role", "worker"], /worker \S+ ready/);
  const viaRedis = await overheadMs(api, w1, "through Redis");
  console.log(`added latency of the queue path: ${(viaRedis - inProcess).toFixed(1)} ms a job`);
  const one = await throughput(api, "1 worker");
  const w2 = await startServer([...queue, "--role", "worker"], /worker \S+ ready/);
  await sleep(1500);
  const two = await throughput(api, "2 workers");
  console.log(`2 workers / 1 worker: ${(two / one).toFixed(2)}x`);
  console.log(`load average after: ${os.loadavg().map((l) => l.toFixed(2)).join(" ")}`);
  for (const p of [w2, w1, api]) await stopServer(p);
  await stopRedis(redis);
  fs.rmSync(dir, { recursive: true, force: true });
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
