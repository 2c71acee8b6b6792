// redis-server for the Redis queue's test and benchmark: a free loopback port, start (AOF
// on, data in a given folder) and stop.
"use strict";

const { spawn } = require("node:child_process");
const net = require("node:net");
const { sleep } = require("./common.cjs");

function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.on("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

// redis-server on 127.0.0.1:port with its data (AOF) in `dir`; resolves once it accepts.
async function startRedis(port, dir, extraArgs = []) {
  const child = spawn("redis-server", ["--port", String(port), "--bind", "127.0.0.1",
    "--dir", dir, "--appendonly", "yes", "--appendfsync", "always", "--save", "", ...extraArgs],
  { stdio: ["ignore", "pipe", "pipe"] });
  let log = "";
  child.stdout.on("data", (d) => { log += d.toString(); });
  child.stderr.on("data", (d) => { log += d.toString(); });
  const spawnError = new Promise((resolve) => child.on("error", resolve));
  const exited = new Promise((resolve) => child.on("exit", (code) => resolve(code)));
  const deadline = Date.now() + 20000;
  while (Date.now() < deadline) {
    if (/Ready to accept connections/.test(log)) return { child, exited, log: () => log };
    const failed = await Promise.race([spawnError, sleep(50).then(() => null)]);
    if (failed)
      throw new Error("cannot run redis-server (scripts/install-deps.sh installs it): " + failed.message);
    if (child.exitCode !== null) break;
  }
  child.kill("SIGKILL");
  throw new Error("redis-server did not start:\n" + log);
}

async function stopRedis(redis) {
  redis.child.kill("SIGTERM");  // flushes the AOF and exits
  await Promise.race([redis.exited, sleep(10000)]);
}

module.exports = { freePort, startRedis, stopRedis };
