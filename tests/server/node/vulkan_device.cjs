// sd-server with --backend vulkan0 (lavapipe in CI): a device lost in the middle of a job fails
// that job with an error naming the device, and the server goes on serving (the next job runs
// on the device opened anew); where there is no Vulkan (the loader finds no driver), the
// backend is one warning line and the jobs run on the CPU.
"use strict";

const { check, request, withServer, failureCount } = require("./common.cjs");

const JOB = { prompt: "a lovely cat", steps: 2, width: 64, height: 64, seed: 42, cfg_scale: 7 };

async function txt2img(server) {
  return request(server.base, "POST", "/sdapi/v1/txt2img", { json: JOB });
}

async function main() {
  const t0 = Date.now();
  // The second queue submission of the process fails as a lost device's: the first job's
  // second diffusion model call.
  await withServer("device lost", async (server) => {
    const lost = await txt2img(server);
    check(lost.status >= 500, "the job on the lost device fails", `${lost.status} ${lost.text.slice(0, 300)}`);
    check(/vulkan0/.test(lost.text) && /VK_ERROR_DEVICE_LOST/.test(lost.text),
          "its error names the device and the loss", lost.text.slice(0, 300));
    check(/vulkan0 was lost; opened it anew/.test(server.log()), "the server opens the device anew");
    const next = await txt2img(server);
    check(next.status === 200 && next.json && next.json.images && next.json.images.length === 1,
          "the next job gives its image", `${next.status} ${next.text.slice(0, 300)}`);
    const health = await request(server.base, "GET", "/health");
    check(health.status === 200, "the server still answers /health", health.status);
  }, ["--backend", "vulkan0"], { SD_VULKAN_FAULT: "device_lost@2" });
  // No driver for the loader to find: no Vulkan device.
  await withServer("no Vulkan", async (server) => {
    const lines = server.log().split("\n").filter((l) => /no Vulkan/.test(l));
    check(lines.length === 1 && /backend: vulkan0: no Vulkan \(.*\); running on the CPU/.test(lines[0]),
          "one line says there is no Vulkan and the CPU runs", lines.join(" | "));
    const r = await txt2img(server);
    check(r.status === 200 && r.json && r.json.images && r.json.images.length === 1,
          "a job runs on the CPU", `${r.status} ${r.text.slice(0, 300)}`);
    check(!/diffusion model on vulkan0/.test(server.log()), "nothing is placed on vulkan0");
  }, ["--backend", "vulkan0"], { VK_ICD_FILENAMES: "/nonexistent/icd.json" });
  console.log(`vulkan_device: ${failureCount() ? failureCount() + " check(s) failed" : "all checks passed"} ` +
              `in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
  process.exit(failureCount() ? 1 : 0);
}

main();
