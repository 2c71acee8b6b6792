// sd-server on a Redis queue over TLS (--queue rediss://): redis-server with only a TLS port,
// a password and client certificates required, certificates from a CA made here (openssl).
// An API node and a worker with --queue-tls-ca/-cert/-key run an OpenAI and a native job
// (each image carrying its request's seed); a node trusting another CA, and one without the
// client certificate, each stop at start with one line naming the problem and exit != 0.
"use strict";

const { spawn, execFileSync } = require("node:child_process");
const fs = require("node:fs");
const os = require("node:os");
const path = require("node:path");
const { check, sleep, startServer, stopServer, request, decodePng, seedOf, failureCount } =
  require("./common.cjs");
const { freePort, startRedis, stopRedis } = require("./redis_helpers.cjs");

// A CA, another CA, a server certificate for IP 127.0.0.1 and a client certificate, in `dir`.
function makePki(dir) {
  const openssl = (...args) => execFileSync("openssl", args, { cwd: dir, stdio: "pipe" });
  const key = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"];
  fs.writeFileSync(path.join(dir, "server.ext"), "subjectAltName=IP:127.0.0.1\n");
  for (const ca of ["ca", "other"])
    openssl("req", "-x509", ...key, "-keyout", `${ca}.key`, "-out", `${ca}.crt`, "-days", "2",
            "-subj", `/CN=sd-${ca}`);
  for (const leaf of ["server", "client"]) {
    openssl("req", ...key, "-keyout", `${leaf}.key`, "-out", `${leaf}.csr`, "-subj", `/CN=sd-${leaf}`);
    openssl("x509", "-req", "-in", `${leaf}.csr`, "-CA", "ca.crt", "-CAkey", "ca.key",
            "-CAcreateserial", "-out", `${leaf}.crt`, "-days", "2",
            ...(leaf === "server" ? ["-extfile", "server.ext"] : []));
  }
  return (name) => path.join(dir, name);
}

// sd-server with `args` must exit != 0 at start; resolves to its output.
function failsAtStart(args) {
  return new Promise((resolve) => {
    const child = spawn(process.env.SD_SERVER, args, { stdio: ["ignore", "pipe", "pipe"] });
    let log = "";
    child.stdout.on("data", (d) => { log += d; });
    child.stderr.on("data", (d) => { log += d; });
    child.on("exit", (code) => resolve({ code, log: log.trim() }));
  });
}

async function main() {
  const t0 = Date.now();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "sd-redis-tls-"));
  const procs = [];
  let redis;
  try {
    const file = makePki(dir);
    const port = await freePort();
    redis = await startRedis(0, dir, ["--tls-port", String(port), "--tls-cert-file", file("server.crt"),
      "--tls-key-file", file("server.key"), "--tls-ca-cert-file", file("ca.crt"),
      "--tls-auth-clients", "yes", "--requirepass", "s3cret"]);
    const url = `rediss://:s3cret@127.0.0.1:${port}`;
    const tls = ["--queue", url, "--queue-tls-ca", file("ca.crt"), "--queue-tls-cert",
                 file("client.crt"), "--queue-tls-key", file("client.key"), "--cfg-scale", "1",
                 "--steps", "1"];
    const [api, worker] = await Promise.all([
      startServer([...tls, "--role", "api"]),
      startServer([...tls, "--role", "worker", "-t", "1"], /worker (\S+) ready/)]);
    procs.push(api, worker);
    check(/over TLS/.test(api.log()), "the API node logs that its queue is over TLS",
          api.log().slice(-400));

    const openai = await request(api.base, "POST", "/v1/images/generations", {
      json: { prompt: 'a house<sd_cpp_extra_args>{"seed": 71}</sd_cpp_extra_args>', size: "64x64",
              n: 1, response_format: "b64_json" } });
    check(openai.status === 200, "an OpenAI request runs through the TLS queue",
          `${openai.status} ${openai.text.slice(0, 300)}`);
    if (openai.status === 200) {
      const png = decodePng(Buffer.from(openai.json.data[0].b64_json, "base64"));
      check(seedOf(png.text.parameters) === 71, "its image carries its seed", png.text.parameters);
    }
    const sub = await request(api.base, "POST", "/sdcpp/v1/img_gen",
                              { json: { prompt: "a house", seed: 72, width: 64, height: 64 } });
    check(sub.status === 202, "a native job is accepted", `${sub.status} ${sub.text.slice(0, 300)}`);
    let job = {};
    for (const deadline = Date.now() + 120000; Date.now() < deadline; await sleep(150)) {
      job = (await request(api.base, "GET", "/sdcpp/v1/jobs/" + sub.json.id)).json || {};
      if (["completed", "failed", "cancelled"].includes(job.status)) break;
    }
    check(job.status === "completed", "the native job completes", JSON.stringify(job).slice(0, 300));

    const untrusted = await failsAtStart(["-m", "x.safetensors", "--role", "api", "--queue", url,
                                          "--queue-tls-ca", file("other.crt")]);
    check(untrusted.code !== 0 && /cannot use Redis.*certificate is not trusted/.test(untrusted.log),
          "a node trusting another CA stops at start, naming the certificate",
          `${untrusted.code} ${untrusted.log}`);
    const noCert = await failsAtStart(["-m", "x.safetensors", "--role", "api", "--queue", url,
                                       "--queue-tls-ca", file("ca.crt")]);
    check(noCert.code !== 0 && /cannot use Redis.*certificate required/.test(noCert.log),
          "a node without the client certificate the server asks for stops at start",
          `${noCert.code} ${noCert.log}`);
    const badCa = await failsAtStart(["-m", "x.safetensors", "--role", "api", "--queue", url,
                                      "--queue-tls-ca", file("missing.crt")]);
    check(badCa.code !== 0 && /--queue-tls-ca: cannot read CA certificates/.test(badCa.log),
          "an unreadable --queue-tls-ca is named", `${badCa.code} ${badCa.log}`);
    for (const r of [untrusted, noCert, badCa]) console.log("refused at start: " + r.log.split("\n").pop());
  } catch (e) {
    check(false, "redis_tls ran to the end", e && e.stack ? e.stack : String(e));
  }
  for (const p of procs) if (p.child.exitCode === null && p.child.signalCode === null) await stopServer(p);
  if (redis) await stopRedis(redis);
  if (failureCount()) {
    for (const p of procs) console.log(`--- log of pid ${p.pid} (last 3000 chars) ---\n` + p.log().slice(-3000));
    if (redis) console.log("--- redis-server log ---\n" + redis.log().slice(-2000));
  }
  fs.rmSync(dir, { recursive: true, force: true });
  console.log(`redis_tls: ${failureCount() ? failureCount() + " check(s) failed" : "all checks passed"} ` +
              `in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
  process.exit(failureCount() ? 1 : 0);
}

main();
