// Shared by the sd-server client tests: start and stop the server on loopback with the sd15
// fixture, HTTP helpers, PNG decoding (text chunks and pixels) and PSNR, and the checks'
// bookkeeping. Environment (set by CTest): SD_SERVER (the program), SD_BUILD_DIR,
// SD_FIXTURES_DIR. For a sanitized server (docs/building.md), SD_TEST_TIME_SCALE (default 1)
// multiplies how long the tests wait for work to finish (generations, a phase to be reached),
// never the latency bounds they check.
"use strict";

const { spawn } = require("node:child_process");
const fs = require("node:fs");
const http = require("node:http");
const path = require("node:path");
const zlib = require("node:zlib");

const buildDir = process.env.SD_BUILD_DIR;
const fixturesDir = process.env.SD_FIXTURES_DIR;
const serverProgram = process.env.SD_SERVER;
if (!buildDir || !fixturesDir || !serverProgram) {
  console.error("SD_SERVER, SD_BUILD_DIR and SD_FIXTURES_DIR must be set (run through ctest)");
  process.exit(2);
}
const clientsDir = path.join(buildDir, "server-clients");

function positiveEnv(name, fallback, min) {
  const raw = process.env[name];
  if (raw === undefined || raw === "") return fallback;
  const v = Number(raw);
  if (!Number.isFinite(v) || v < min) {
    console.error(`${name}=${raw}: want a number >= ${min}`);
    process.exit(2);
  }
  return v;
}
const timeScale = positiveEnv("SD_TEST_TIME_SCALE", 1, 1);
// A wait for work to finish, in ms, under SD_TEST_TIME_SCALE.
const scaled = (ms) => ms * timeScale;

// Modules installed by setup.sh into the build folder.
function requireClient(name) {
  return require(path.join(clientsDir, "node_modules", name));
}

function fixturePath() {
  const file = path.join(clientsDir, "fixture.txt");
  if (!fs.existsSync(file)) throw new Error(file + " is missing: run the server_client_setup test");
  return fs.readFileSync(file, "utf8").trim();
}

let failures = 0;
function check(ok, what, detail) {
  if (ok) {
    console.log("ok   " + what);
  } else {
    failures++;
    console.log("FAIL " + what + (detail !== undefined ? ": " + detail : ""));
  }
  return ok;
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// Starts sd-server on 127.0.0.1 with a free port; resolves once it listens (or, with
// `ready`, once its log matches that pattern: a --role worker has no port). `env` adds to the
// environment the server runs with.
async function startServer(extraArgs = [], ready = null, env = {}) {
  const threads = String(Math.max(1, Math.min(4, require("node:os").availableParallelism())));
  const args = ["-m", fixturePath(), "--tokenizer-dir", path.join(fixturesDir, "tokenizers"),
                "-l", "127.0.0.1", "--listen-port", "0", "-t", threads,
                "-W", "64", "-H", "64", "--steps", "2", ...extraArgs];
  const child = spawn(serverProgram, args, { stdio: ["ignore", "pipe", "pipe"],
                                             env: { ...process.env, ...env } });
  let log = "";
  const onData = (d) => { log += d.toString(); };
  child.stdout.on("data", onData);
  child.stderr.on("data", onData);
  const exited = new Promise((resolve) => child.on("exit", (code, signal) => resolve({ code, signal })));
  const deadline = Date.now() + scaled(120000);
  while (Date.now() < deadline) {
    const m = /listening on http:\/\/([0-9.]+):(\d+)/.exec(log);
    if (ready && ready.test(log)) return { child, base: null, pid: child.pid, exited, log: () => log };
    if (m) {
      const server = { child, base: `http://${m[1]}:${m[2]}`, pid: child.pid, exited,
                       log: () => log };
      return server;
    }
    if (child.exitCode !== null) break;
    await sleep(100);
  }
  child.kill("SIGKILL");
  throw new Error("sd-server did not start:\n" + log);
}

// SIGTERM (or `signal`), then the exit status must be 0 within 60 s.
async function stopServer(server, signal = "SIGTERM") {
  server.child.kill(signal);
  const result = await Promise.race([server.exited, sleep(60000).then(() => null)]);
  if (!result) {
    server.child.kill("SIGKILL");
    check(false, "the server stops within 60 s of SIGTERM");
    return;
  }
  check(result.code === 0, "the server exits 0 on " + signal, JSON.stringify(result));
  check(/stopped/.test(server.log()), "the server logs that it stopped");
}

// A request over a fresh connection (node:http: no client-side timeouts, raw bodies);
// resolves to {status, headers, text, json (or undefined), ms}. `body` may be a string, a
// Buffer or a FormData (encoded here as multipart).
async function request(base, method, route, { json, body, headers = {} } = {}) {
  const h = { ...headers };
  let payload;
  if (json !== undefined) {
    h["Content-Type"] = "application/json";
    payload = Buffer.from(JSON.stringify(json));
  } else if (body instanceof FormData) {
    const encoded = new Response(body);
    h["Content-Type"] = encoded.headers.get("content-type");
    payload = Buffer.from(await encoded.arrayBuffer());
  } else if (body !== undefined) {
    payload = Buffer.isBuffer(body) ? body : Buffer.from(body);
  }
  if (payload !== undefined && h["Content-Length"] === undefined) h["Content-Length"] = payload.length;
  const url = new URL(base + route);
  const t0 = performance.now();
  return new Promise((resolve, reject) => {
    const req = http.request({ host: url.hostname, port: url.port, path: url.pathname + url.search,
                               method, headers: h, agent: false }, (res) => {
      const chunks = [];
      res.on("data", (c) => chunks.push(c));
      res.on("end", () => {
        const text = Buffer.concat(chunks).toString("utf8");
        let parsed;
        try { parsed = JSON.parse(text); } catch (e) { parsed = undefined; }
        resolve({ status: res.statusCode, headers: new Headers(res.headers), text, json: parsed,
                  ms: performance.now() - t0 });
      });
      res.on("error", reject);
    });
    req.on("error", reject);
    if (payload !== undefined) req.write(payload);
    req.end();
  });
}

// Polls a native job until it finished; resolves to the last job object.
async function waitJob(base, id, timeoutMs = scaled(600000)) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const r = await request(base, "GET", "/sdcpp/v1/jobs/" + id);
    if (r.status !== 200) throw new Error(`GET job ${id}: ${r.status} ${r.text.slice(0, 200)}`);
    if (["completed", "failed", "cancelled"].includes(r.json.status)) return r.json;
    if (Date.now() > deadline) throw new Error(`job ${id} did not finish`);
    await sleep(200);
  }
}

// The decoded PNG: {width, height, channels, pixels (RGB or grey, 8 bit), text: {key: value}}.
function decodePng(buffer) {
  const signature = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
  if (buffer.length < 8 || !buffer.subarray(0, 8).equals(signature)) throw new Error("not a PNG");
  let pos = 8, width = 0, height = 0, bitDepth = 0, colorType = 0, interlace = 0;
  const idat = [], text = {};
  while (pos + 8 <= buffer.length) {
    const length = buffer.readUInt32BE(pos);
    const type = buffer.toString("latin1", pos + 4, pos + 8);
    const data = buffer.subarray(pos + 8, pos + 8 + length);
    pos += 12 + length;
    if (type === "IHDR") {
      width = data.readUInt32BE(0);
      height = data.readUInt32BE(4);
      bitDepth = data[8];
      colorType = data[9];
      interlace = data[12];
    } else if (type === "IDAT") {
      idat.push(data);
    } else if (type === "tEXt") {
      const zero = data.indexOf(0);
      text[data.toString("latin1", 0, zero)] = data.toString("latin1", zero + 1);
    } else if (type === "iTXt") {
      const zero = data.indexOf(0);
      const key = data.toString("latin1", 0, zero);
      let p = zero + 3;  // compression flag and method
      p = data.indexOf(0, p) + 1;  // language tag
      p = data.indexOf(0, p) + 1;  // translated keyword
      const compressed = data[zero + 1] === 1;
      const rest = data.subarray(p);
      text[key] = (compressed ? zlib.inflateSync(rest) : rest).toString("utf8");
    } else if (type === "IEND") {
      break;
    }
  }
  const channelsOf = { 0: 1, 2: 3, 4: 2, 6: 4 };
  if (bitDepth !== 8 || interlace !== 0 || !(colorType in channelsOf))
    throw new Error(`unsupported PNG (depth ${bitDepth}, color ${colorType}, interlace ${interlace})`);
  const bpp = channelsOf[colorType];
  const raw = zlib.inflateSync(Buffer.concat(idat));
  const stride = width * bpp;
  const out = Buffer.alloc(stride * height);
  for (let y = 0; y < height; y++) {
    const filter = raw[y * (stride + 1)];
    const line = raw.subarray(y * (stride + 1) + 1, (y + 1) * (stride + 1));
    for (let x = 0; x < stride; x++) {
      const a = x >= bpp ? out[y * stride + x - bpp] : 0;
      const b = y > 0 ? out[(y - 1) * stride + x] : 0;
      const c = x >= bpp && y > 0 ? out[(y - 1) * stride + x - bpp] : 0;
      let v = line[x];
      if (filter === 1) v += a;
      else if (filter === 2) v += b;
      else if (filter === 3) v += (a + b) >> 1;
      else if (filter === 4) {
        const p = a + b - c, pa = Math.abs(p - a), pb = Math.abs(p - b), pc = Math.abs(p - c);
        v += pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
      }
      out[y * stride + x] = v & 255;
    }
  }
  // Keep RGB (drop alpha) so images compare as the C++ tests compare them.
  const channels = bpp >= 3 ? 3 : 1;
  const pixels = Buffer.alloc(width * height * channels);
  for (let i = 0; i < width * height; i++)
    for (let k = 0; k < channels; k++) pixels[i * channels + k] = out[i * bpp + k];
  return { width, height, channels, pixels, text };
}

function psnr(a, b) {
  if (a.length !== b.length) return -1;
  let se = 0;
  for (let i = 0; i < a.length; i++) se += (a[i] - b[i]) ** 2;
  if (se === 0) return Infinity;
  return 10 * Math.log10((255 * 255) / (se / a.length));
}

// The seed in an image's "parameters" text ("..., Seed: 42, ...").
function seedOf(parameters) {
  const m = /(?:^|[\s,])Seed: (-?\d+)/.exec(parameters || "");
  return m ? Number(m[1]) : undefined;
}

// VmRSS of /proc/PID/status in KiB; with `detail`, {rss, anon, file} (RssAnon, RssFile).
function vmRssKiB(pid, detail = false) {
  const status = fs.readFileSync(`/proc/${pid}/status`, "utf8");
  const read = (key) => {
    const m = new RegExp(key + ":\\s+(\\d+) kB").exec(status);
    return m ? Number(m[1]) : NaN;
  };
  return detail ? { rss: read("VmRSS"), anon: read("RssAnon"), file: read("RssFile") } : read("VmRSS");
}

// Runs `body(server)` on a fresh server (with `serverArgs`, and `env` added to its
// environment) and stops it; a throw is a failed check, and the server's log is printed
// when a check has failed.
async function withServer(name, body, serverArgs = [], env = {}) {
  let server;
  try {
    server = await startServer(serverArgs, null, env);
    console.log(`${name}: sd-server pid ${server.pid} at ${server.base}`);
    await body(server);
  } catch (e) {
    check(false, name + " ran to the end", e && e.stack ? e.stack : String(e));
  }
  if (server) {
    if (server.child.exitCode === null) await stopServer(server);
    if (failures) console.log("--- server log (last 4000 chars) ---\n" + server.log().slice(-4000));
  }
}

// Runs `body(server)` on a fresh server, stops it, and exits 1 when a check failed.
async function runWithServer(name, body, serverArgs = []) {
  const t0 = Date.now();
  await withServer(name, body, serverArgs);
  console.log(`${name}: ${failures ? failures + " check(s) failed" : "all checks passed"} ` +
              `in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
  process.exit(failures ? 1 : 0);
}

module.exports = {
  failureCount: () => failures,
  buildDir, clientsDir, fixturesDir, fixturePath, requireClient, check, sleep, startServer, stopServer,
  request, waitJob, decodePng, psnr, seedOf, vmRssKiB, runWithServer, withServer, scaled,
};
