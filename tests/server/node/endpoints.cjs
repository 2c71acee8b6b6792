// Every route of sd-server called on loopback with the sd15 fixture checkpoint: the web page,
// /health, the OpenAI, AUTOMATIC1111 and native APIs. /sdapi/v1/txt2img with a reference
// case's parameters (../shared/fixtures/reference/sd15/cases.tsv) must match its PNG at
// 40 dB PSNR or more, as sd-cli does; a body copied from the AUTOMATIC1111 API wiki is
// accepted as is.
"use strict";

const fs = require("node:fs");
const path = require("node:path");
const { fixturesDir, check, request, waitJob, decodePng, psnr, seedOf, runWithServer, sleep } =
  require("./common.cjs");

// The first txt2img case of reference/sd15/cases.tsv as sd-cli arguments.
function referenceCase() {
  const folder = path.join(fixturesDir, "reference", "sd15");
  for (const line of fs.readFileSync(path.join(folder, "cases.tsv"), "utf8").split("\n")) {
    if (!line || line.startsWith("#") || !line.startsWith("txt2img_")) continue;
    const [id, argText] = line.split("\t");
    const args = [...argText.matchAll(/"([^"]*)"|(\S+)/g)].map((m) => (m[1] !== undefined ? m[1] : m[2]));
    const flags = {};
    for (let i = 0; i < args.length; i += 2) flags[args[i]] = args[i + 1];
    return { id, flags, png: path.join(folder, id + ".png") };
  }
  throw new Error("no txt2img case in reference/sd15/cases.tsv");
}

// sd-cli flags -> the webui's txt2img fields.
function sdapiBody(flags) {
  const body = {
    prompt: flags["-p"],
    negative_prompt: flags["-n"] || "",
    steps: Number(flags["--steps"]),
    width: Number(flags["-W"]),
    height: Number(flags["-H"]),
    seed: Number(flags["-s"]),
    cfg_scale: Number(flags["--cfg-scale"]),
    sampler_name: flags["--sampling-method"],
    scheduler: flags["--scheduler"],
  };
  const known = ["-p", "-n", "--steps", "-W", "-H", "-s", "--cfg-scale", "--sampling-method",
                 "--scheduler", "--rng"];
  for (const flag of Object.keys(flags))
    if (!known.includes(flag)) throw new Error("the case uses " + flag + ", not mapped here");
  if ((flags["--rng"] || "cuda") !== "cuda") throw new Error("the server's RNG is cuda");
  return body;
}

function pngOf(b64) {
  return decodePng(Buffer.from(b64, "base64"));
}

async function staticRoutes(base) {
  const page = await request(base, "GET", "/");
  check(page.status === 200 && /<form id="gen-form"/.test(page.text) &&
        /text\/html/.test(page.headers.get("content-type")), "GET / serves the web page");
  check(!/https?:\/\/(?!127\.0\.0\.1)/.test(page.text), "the page loads nothing from elsewhere");
  for (const [file, type] of [["/app.js", "javascript"], ["/style.css", "css"]]) {
    const r = await request(base, "GET", file);
    check(r.status === 200 && r.text.length > 100 && r.headers.get("content-type").includes(type),
          "GET " + file);
  }
  const health = await request(base, "GET", "/health");
  check(health.status === 200 && health.json.status === "ok" && health.json.queue.queued === 0,
        "GET /health", health.text);
  const missing = await request(base, "GET", "/no/such/route");
  check(missing.status === 404 && missing.json && missing.json.error, "unknown route: 404 JSON");
}

async function openaiRoutes(base) {
  const models = await request(base, "GET", "/v1/models");
  check(models.status === 200 && models.json.object === "list" && models.json.data.length === 1,
        "GET /v1/models", models.text);

  const gen = await request(base, "POST", "/v1/images/generations", {
    json: { prompt: "a red cube <sd_cpp_extra_args>{\"seed\": 77}</sd_cpp_extra_args>",
            n: 1, size: "64x64", response_format: "b64_json", output_format: "jpeg" } });
  check(gen.status === 200 && gen.json.data.length === 1 && gen.json.output_format === "jpeg",
        "POST /v1/images/generations", gen.text.slice(0, 300));
  if (gen.status === 200) {
    const bytes = Buffer.from(gen.json.data[0].b64_json, "base64");
    check(bytes[0] === 0xff && bytes[1] === 0xd8, "output_format jpeg gives a JPEG");
    check(gen.json.data[0].revised_prompt === "a red cube ", "the extra args leave the prompt",
          JSON.stringify(gen.json.data[0].revised_prompt));
  }
  return gen;
}

async function openaiEdit(base, initPngB64) {
  const form = new FormData();
  form.append("prompt", "a blue cube");
  form.append("image[]", new Blob([Buffer.from(initPngB64, "base64")], { type: "image/png" }), "init.png");
  form.append("size", "64x64");
  form.append("n", "1");
  const edit = await request(base, "POST", "/v1/images/edits", { body: form });
  check(edit.status === 200 && edit.json.data.length === 1, "POST /v1/images/edits (multipart)",
        edit.text.slice(0, 300));
  if (edit.status === 200) {
    const png = pngOf(edit.json.data[0].b64_json);
    check(png.width === 64 && png.height === 64, "the edit is 64x64");
  }
}

async function sdapiDiscovery(base) {
  for (const route of ["samplers", "schedulers", "sd-models", "options", "loras", "upscalers",
                       "latent-upscale-modes", "progress"]) {
    const r = await request(base, "GET", "/sdapi/v1/" + route);
    check(r.status === 200 && r.json !== undefined, "GET /sdapi/v1/" + route, r.text.slice(0, 200));
    if (route === "samplers")
      check(r.json.some((s) => s.name === "euler" && s.aliases.includes("Euler")),
            "samplers list euler with its webui name");
    if (route === "sd-models")
      check(r.json[0].filename === "sd15_f16_seed1.safetensors", "sd-models names the checkpoint",
            r.text);
  }
  const options = await request(base, "POST", "/sdapi/v1/options",
                                { json: { sd_model_checkpoint: "sd15_f16_seed1" } });
  check(options.status === 200, "POST /sdapi/v1/options", options.text);
  const interrupt = await request(base, "POST", "/sdapi/v1/interrupt");
  check(interrupt.status === 200, "POST /sdapi/v1/interrupt with nothing running");
}

async function sdapiReference(base) {
  const c = referenceCase();
  const body = sdapiBody(c.flags);
  const r = await request(base, "POST", "/sdapi/v1/txt2img", { json: body });
  if (!check(r.status === 200 && r.json.images.length === 1, "POST /sdapi/v1/txt2img " + c.id,
             r.text.slice(0, 300)))
    return null;
  const info = JSON.parse(r.json.info);
  check(info.all_seeds[0] === body.seed && r.json.parameters.seed === body.seed,
        "info and parameters carry the seed");
  const got = pngOf(r.json.images[0]);
  const want = decodePng(fs.readFileSync(c.png));
  check(got.width === want.width && got.height === want.height, "the size matches the reference");
  const p = psnr(got.pixels, want.pixels);
  console.log(`PSNR ${c.id} via /sdapi/v1/txt2img: ${p.toFixed(2)} dB`);
  check(p >= 40, `the image matches reference/sd15/${c.id}.png (>= 40 dB)`, p.toFixed(2) + " dB");
  check(seedOf(got.text.parameters) === body.seed, "the PNG's parameters name the seed");
  return r.json.images[0];
}

async function sdapiImg2img(base, initB64) {
  // A 64x64 crop of the reference image as the init image, a left-half mask.
  const r = await request(base, "POST", "/sdapi/v1/img2img", {
    json: { init_images: [initB64], prompt: "a lovely cat", steps: 2, denoising_strength: 0.5,
            width: 64, height: 64, seed: 3, sampler_name: "Euler a" } });
  check(r.status === 200 && r.json.images.length === 1, "POST /sdapi/v1/img2img",
        r.text.slice(0, 300));
  if (r.status === 200) {
    const png = pngOf(r.json.images[0]);
    check(png.width === 64 && png.height === 64, "img2img keeps the asked size");
    check(r.json.parameters.init_images === null, "the echo leaves out the init image");
  }
}

// From the AUTOMATIC1111 wiki's API guide ("API" page), verbatim:
//   payload = {"prompt": "maltese puppy", "steps": 5}
async function sdapiWikiBody(base) {
  const wikiBody = '{\n    "prompt": "maltese puppy",\n    "steps": 5\n}';
  const r = await request(base, "POST", "/sdapi/v1/txt2img",
                          { body: wikiBody, headers: { "Content-Type": "application/json" } });
  check(r.status === 200 && Array.isArray(r.json.images) && r.json.images.length === 1 &&
        typeof r.json.info === "string" && r.json.parameters.prompt === "maltese puppy",
        "the AUTOMATIC1111 wiki's txt2img payload is accepted as is", r.text.slice(0, 300));
  if (r.status === 200) {
    const info = JSON.parse(r.json.info);
    check(info.steps === 5 && info.prompt === "maltese puppy", "info reports its steps and prompt",
          JSON.stringify({ steps: info.steps, prompt: info.prompt }));
  }
}

async function nativeRoutes(base) {
  const caps = await request(base, "GET", "/sdcpp/v1/capabilities");
  check(caps.status === 200 && caps.json.model.name === "sd15_f16_seed1.safetensors" &&
        caps.json.samplers.includes("euler") && caps.json.limits.max_queue_size > 0 &&
        caps.json.features.preview === true,
        "GET /sdcpp/v1/capabilities");
  check(caps.json.current_mode === "img_gen" &&
        JSON.stringify(caps.json.supported_modes) === '["img_gen"]' &&
        caps.json.defaults_by_mode.vid_gen === undefined,
        "an image model's capabilities offer img_gen alone", JSON.stringify(caps.json.supported_modes));
  const video = await request(base, "POST", "/sdcpp/v1/vid_gen",
                              { json: { prompt: "a cat", video_frames: 5 } });
  check(video.status === 400 && video.json.error.code === "unsupported_mode" &&
        /video model/.test(video.json.error.message),
        "POST /sdcpp/v1/vid_gen on an image model: 400 naming the mode", video.text);
  const submit = await request(base, "POST", "/sdcpp/v1/img_gen", {
    json: { prompt: "a green cube", width: 64, height: 64, seed: 11, batch_count: 2,
            sample_params: { sample_steps: 2, sample_method: "euler", guidance: { txt_cfg: 1 } } } });
  check(submit.status === 202 && /^job_/.test(submit.json.id) &&
        submit.json.poll_url === "/sdcpp/v1/jobs/" + submit.json.id,
        "POST /sdcpp/v1/img_gen answers 202 with a job id", submit.text);
  // A second job, cancelled while the first one runs.
  const second = await request(base, "POST", "/sdcpp/v1/img_gen",
                               { json: { prompt: "never", width: 64, height: 64 } });
  const cancel = await request(base, "POST", `/sdcpp/v1/jobs/${second.json.id}/cancel`);
  check(cancel.status === 200 && cancel.json.status === "cancelled",
        "POST /sdcpp/v1/jobs/{id}/cancel on a queued job", cancel.text);
  let sawProgress = false, sawPreview = false;
  for (let i = 0; i < 600; i++) {
    const r = await request(base, "GET", "/sdcpp/v1/jobs/" + submit.json.id);
    if (r.json.status === "generating" && r.json.progress.step > 0) sawProgress = true;
    const p = r.json.preview;  // proj by default: the 8x8 latent as RGB, a PNG
    if (p && p.width === 8 && p.height === 8 && p.mime_type === "image/png" &&
        Buffer.from(p.b64_json, "base64").subarray(1, 4).toString() === "PNG") sawPreview = true;
    if (r.json.status === "completed" || r.json.status === "failed") break;
    await sleep(100);
  }
  check(sawProgress, "GET /sdcpp/v1/jobs/{id} shows the steps while generating");
  check(sawPreview, "GET /sdcpp/v1/jobs/{id} shows a step preview while generating");
  const job = await waitJob(base, submit.json.id);
  check(job.status === "completed" && job.result.images.length === 2,
        "the native job completes with its 2 images", JSON.stringify(job.error));
  if (job.status === "completed") {
    check(job.result.images.map((im) => im.seed).join() === "11,12", "the batch's seeds are 11, 12");
    check(job.progress.step === job.progress.steps && job.progress.steps === 4,
          "progress counts the steps of both images", JSON.stringify(job.progress));
  }
  const again = await request(base, "POST", `/sdcpp/v1/jobs/${submit.json.id}/cancel`);
  check(again.status === 409 && again.json.error, "cancelling a finished job: 409 JSON",
        again.status + " " + again.text);
  const gone = await request(base, "GET", "/sdcpp/v1/jobs/job_nope");
  check(gone.status === 404 && gone.json.error, "an unknown job: 404 JSON");
}

runWithServer("endpoints", async (server) => {
  const base = server.base;
  await staticRoutes(base);
  await sdapiDiscovery(base);
  await nativeRoutes(base);
  await openaiRoutes(base);
  const reference = await sdapiReference(base);
  await sdapiWikiBody(base);
  // A 64x64 image to feed img2img and the edit.
  const init = await request(base, "POST", "/sdapi/v1/txt2img",
                             { json: { prompt: "init", width: 64, height: 64, steps: 1, seed: 5 } });
  const initB64 = init.status === 200 ? init.json.images[0] : reference;
  if (initB64) {
    await sdapiImg2img(base, initB64);
    await openaiEdit(base, initB64);
  }
  const health = await request(base, "GET", "/health");
  check(health.json.jobs.failed === 0, "no job failed", JSON.stringify(health.json.jobs));
}, ["--cfg-scale", "1", "--steps", "1"]);
