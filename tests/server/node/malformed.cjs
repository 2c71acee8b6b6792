// Malformed requests to every API: wrong types, missing fields, huge sizes, bad base64,
// bad images, bad multipart, bad JSON, too large a body. Each must be answered 4xx with a
// JSON error (naming the field where there is one), and the server must keep serving:
// /health between them, and a generation at the end.
"use strict";

const zlib = require("node:zlib");
const { check, request, runWithServer, sleep, stopServer } = require("./common.cjs");

function crc32(buffer) {
  let crc = ~0;
  for (const byte of buffer) {
    crc ^= byte;
    for (let k = 0; k < 8; k++) crc = (crc >>> 1) ^ (0xedb88320 & -(crc & 1));
  }
  return ~crc >>> 0;
}

// A PNG of width x height grey pixels; with `claim`, its header says claim x claim instead
// (the pixel data then does not fit it).
function png(width, height, claim) {
  const chunk = (type, data) => {
    const length = Buffer.alloc(4);
    length.writeUInt32BE(data.length);
    const body = Buffer.concat([Buffer.from(type, "latin1"), data]);
    const crc = Buffer.alloc(4);
    crc.writeUInt32BE(crc32(body));
    return Buffer.concat([length, body, crc]);
  };
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(claim || width, 0);
  ihdr.writeUInt32BE(claim || height, 4);
  ihdr[8] = 8;  // bit depth
  ihdr[9] = 2;  // RGB
  const raw = Buffer.alloc((width * 3 + 1) * height, 128);
  for (let y = 0; y < height; y++) raw[y * (width * 3 + 1)] = 0;  // filter: none
  return Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
                        chunk("IHDR", ihdr), chunk("IDAT", zlib.deflateSync(raw)),
                        chunk("IEND", Buffer.alloc(0))]);
}

const goodPng = png(64, 64);
const bomb = png(64, 64, 60000).toString("base64");
const notImage = Buffer.from("hello, this is text").toString("base64");

function multipart(boundary, parts, { close = true } = {}) {
  let body = "";
  for (const [name, value, filename] of parts) {
    body += `--${boundary}\r\nContent-Disposition: form-data; name="${name}"` +
            (filename ? `; filename="${filename}"\r\nContent-Type: application/octet-stream` : "") +
            `\r\n\r\n${value}\r\n`;
  }
  if (close) body += `--${boundary}--\r\n`;
  return Buffer.from(body, "latin1");
}

const T2I = "/sdapi/v1/txt2img", I2I = "/sdapi/v1/img2img", GEN = "/v1/images/generations";
const EDIT = "/v1/images/edits", NATIVE = "/sdcpp/v1/img_gen";
const ok = { prompt: "x" };

// [name, method, route, options for request(), the field the error must name (or null)]
const cases = [
  // Not JSON, or not an object.
  ["txt2img: body not JSON", "POST", T2I, { body: "{\"prompt\": ", headers: { "Content-Type": "application/json" } }, null],
  ["txt2img: empty body", "POST", T2I, { body: "" }, null],
  ["txt2img: a JSON array", "POST", T2I, { json: [1, 2] }, null],
  ["txt2img: a JSON string", "POST", T2I, { json: "prompt" }, null],
  ["txt2img: invalid UTF-8", "POST", T2I, { body: Buffer.from([0x7b, 0x22, 0x70, 0x22, 0x3a, 0x22, 0xff, 0xfe, 0x22, 0x7d]) }, null],
  ["native: nested 1000 deep", "POST", NATIVE, { body: "{\"a\":" + "[".repeat(1000) + "]".repeat(1000) + "}" }, null],
  // Wrong types.
  ["txt2img: prompt a number", "POST", T2I, { json: { prompt: 5 } }, "prompt"],
  ["txt2img: steps a string", "POST", T2I, { json: { ...ok, steps: "many" } }, "steps"],
  ["txt2img: steps fractional", "POST", T2I, { json: { ...ok, steps: 2.5 } }, "steps"],
  ["txt2img: cfg_scale a string", "POST", T2I, { json: { ...ok, cfg_scale: "high" } }, "cfg_scale"],
  ["txt2img: seed a string", "POST", T2I, { json: { ...ok, seed: "abc" } }, "seed"],
  ["txt2img: width a bool", "POST", T2I, { json: { ...ok, width: true } }, "width"],
  ["txt2img: sampler_name unknown", "POST", T2I, { json: { ...ok, sampler_name: "warp drive" } }, "sampler_name"],
  ["txt2img: scheduler a number", "POST", T2I, { json: { ...ok, scheduler: 5 } }, "scheduler"],
  ["txt2img: override_settings a string", "POST", T2I, { json: { ...ok, override_settings: "fast" } }, "override_settings"],
  ["txt2img: styles not a list", "POST", T2I, { json: { ...ok, styles: "a" } }, "styles"],
  ["native: sample_params an array", "POST", NATIVE, { json: { ...ok, sample_params: [] } }, "sample_params"],
  ["native: sample_steps a string", "POST", NATIVE, { json: { ...ok, sample_params: { sample_steps: "3" } } }, "sample_params.sample_steps"],
  ["native: txt_cfg NaN-ish", "POST", NATIVE, { json: { ...ok, sample_params: { guidance: { txt_cfg: "NaN" } } } }, "sample_params.guidance.txt_cfg"],
  ["native: width a string", "POST", NATIVE, { json: { ...ok, width: "64" } }, "width"],
  ["native: output_format gif", "POST", NATIVE, { json: { ...ok, output_format: "gif" } }, "output_format"],
  ["native: output_compression 500", "POST", NATIVE, { json: { ...ok, output_compression: 500 } }, "output_compression"],
  ["native: strength 5", "POST", NATIVE, { json: { ...ok, strength: 5 } }, "strength"],
  ["native: sample_method unknown", "POST", NATIVE, { json: { ...ok, sample_params: { sample_method: "nope" } } }, "sample_params.sample_method"],
  ["openai: n a string", "POST", GEN, { json: { ...ok, n: "two" } }, "n"],
  ["openai: response_format url", "POST", GEN, { json: { ...ok, response_format: "url" } }, "response_format"],
  ["openai: output_format bmp", "POST", GEN, { json: { ...ok, output_format: "bmp" } }, "output_format"],
  ["openai: model a number", "POST", GEN, { json: { ...ok, model: 3 } }, "model"],
  ["openai: extra args not JSON", "POST", GEN, { json: { prompt: "x <sd_cpp_extra_args>{oops</sd_cpp_extra_args>" } }, "sd_cpp_extra_args"],
  ["openai: extra args unclosed", "POST", GEN, { json: { prompt: "x <sd_cpp_extra_args>{}" } }, "prompt"],
  ["openai: extra args unknown key", "POST", GEN, { json: { prompt: "x <sd_cpp_extra_args>{\"steps\": 5}</sd_cpp_extra_args>" } }, "sd_cpp_extra_args.steps"],
  ["sdapi: extra args unknown nested key", "POST", T2I, { json: { prompt: "x <sd_cpp_extra_args>{\"sample_params\": {\"cfg_scale\": 5}}</sd_cpp_extra_args>" } }, "sd_cpp_extra_args.sample_params.cfg_scale"],
  ["native: prompt with a NUL", "POST", NATIVE, { json: { prompt: "a\u0000b" } }, "prompt"],
  ["openai: extra args wrong type", "POST", GEN, { json: { prompt: "x <sd_cpp_extra_args>{\"seed\": \"s\"}</sd_cpp_extra_args>" } }, "sd_cpp_extra_args.seed"],
  // Missing fields.
  ["openai: no prompt", "POST", GEN, { json: { n: 1 } }, "prompt"],
  ["openai: blank prompt", "POST", GEN, { json: { prompt: "  " } }, "prompt"],
  ["img2img: no init_images", "POST", I2I, { json: { ...ok } }, "init_images"],
  ["img2img: init_images empty", "POST", I2I, { json: { ...ok, init_images: [] } }, "init_images"],
  // Huge or out-of-range sizes.
  ["txt2img: width 100000", "POST", T2I, { json: { ...ok, width: 100000 } }, "width"],
  ["txt2img: height 1e30", "POST", T2I, { json: { ...ok, height: 1e30 } }, "height"],
  ["txt2img: width below the minimum", "POST", T2I, { json: { ...ok, width: 32 } }, "width"],
  ["txt2img: height negative", "POST", T2I, { json: { ...ok, height: -64 } }, "height"],
  ["txt2img: steps 1000000", "POST", T2I, { json: { ...ok, steps: 1000000 } }, "steps"],
  ["txt2img: batch_size 1000", "POST", T2I, { json: { ...ok, batch_size: 1000 } }, "batch_size"],
  ["txt2img: batch_size x n_iter", "POST", T2I, { json: { ...ok, batch_size: 8, n_iter: 8 } }, "n_iter"],
  ["native: batch_count 999", "POST", NATIVE, { json: { ...ok, batch_count: 999 } }, "batch_count"],
  ["openai: size 99999x99999", "POST", GEN, { json: { ...ok, size: "99999x99999" } }, "size"],
  ["openai: size words", "POST", GEN, { json: { ...ok, size: "big" } }, "size"],
  ["openai: n 1000", "POST", GEN, { json: { ...ok, n: 1000 } }, "n"],
  ["txt2img: body over --max-body-size", "POST", T2I, { json: { prompt: "x".repeat(2 << 20) } }, null],
  // Bad base64 and bad images.
  ["img2img: init image not base64", "POST", I2I, { json: { ...ok, init_images: ["!!!not base64!!!"] } }, "init_images[0]"],
  ["img2img: init image base64 text", "POST", I2I, { json: { ...ok, init_images: [notImage] } }, "init_images[0]"],
  ["img2img: init image a number", "POST", I2I, { json: { ...ok, init_images: [42] } }, "init_images[0]"],
  ["img2img: mask not base64", "POST", I2I, { json: { ...ok, init_images: [goodPng.toString("base64")], mask: "###" } }, "mask"],
  ["img2img: a 60000x60000 PNG", "POST", I2I, { json: { ...ok, init_images: [bomb] } }, "init_images[0]"],
  ["img2img: data URL not base64", "POST", I2I, { json: { ...ok, init_images: ["data:image/png,abc"] } }, "init_images[0]"],
  ["native: init_image bad base64", "POST", NATIVE, { json: { ...ok, init_image: "abc$" } }, "init_image"],
  ["native: mask_image not an image", "POST", NATIVE, { json: { ...ok, mask_image: notImage } }, "mask_image"],
  ["native: control_image not an image", "POST", NATIVE, { json: { ...ok, control_image: notImage } }, "control_image"],
  ["native: control_image bad base64", "POST", NATIVE, { json: { ...ok, control_image: "abc$" } }, "control_image"],
  // Bad multipart (OpenAI edits).
  ["edits: JSON instead of multipart", "POST", EDIT, { json: { prompt: "x", image: notImage } }, null],
  ["edits: multipart without boundary", "POST", EDIT, { body: "--x\r\n\r\n", headers: { "Content-Type": "multipart/form-data" } }, null],
  ["edits: multipart garbage", "POST", EDIT, { body: "this is not multipart at all", headers: { "Content-Type": "multipart/form-data; boundary=XyZ" } }, null],
  ["edits: multipart truncated", "POST", EDIT, { body: multipart("XyZ", [["prompt", "x"], ["image", "abc", "a.png"]], { close: false }).slice(0, -20), headers: { "Content-Type": "multipart/form-data; boundary=XyZ" } }, null],
  ["edits: no image", "POST", EDIT, { body: multipart("XyZ", [["prompt", "x"]]), headers: { "Content-Type": "multipart/form-data; boundary=XyZ" } }, "image"],
  ["edits: image not an image", "POST", EDIT, { body: multipart("XyZ", [["prompt", "x"], ["image", "GIF89a....", "a.gif"]]), headers: { "Content-Type": "multipart/form-data; boundary=XyZ" } }, "image"],
  ["edits: no prompt", "POST", EDIT, { body: multipart("XyZ", [["image", "abc", "a.png"]]), headers: { "Content-Type": "multipart/form-data; boundary=XyZ" } }, "prompt"],
  ["edits: n not a number", "POST", EDIT, { body: multipart("XyZ", [["prompt", "x"], ["image", goodPng.toString("latin1"), "a.png"], ["n", "abc"]]), headers: { "Content-Type": "multipart/form-data; boundary=XyZ" } }, "n"],
  // Routes and methods.
  ["unknown route", "GET", "/sdapi/v2/nothing", {}, null],
  ["GET on a POST route", "GET", T2I, {}, null],
  ["unknown job", "GET", "/sdcpp/v1/jobs/job_does_not_exist", {}, null],
  ["cancel an unknown job", "POST", "/sdcpp/v1/jobs/job_does_not_exist/cancel", {}, null],
  ["POST /sdapi/v1/options not JSON", "POST", "/sdapi/v1/options", { body: "nope" }, null],
];

runWithServer("malformed", async (server) => {
  const base = server.base;
  let answered = 0;
  for (const [name, method, route, options, field] of cases) {
    let r;
    try {
      r = await request(base, method, route, options);
    } catch (e) {
      check(false, name + ": answered", String(e));
      continue;
    }
    const error = r.json && r.json.error;
    const message = error ? (typeof error === "string" ? error : error.message || "") : "";
    const good = r.status >= 400 && r.status < 500 && !!error && message.length > 0 &&
                 /application\/json/.test(r.headers.get("content-type") || "");
    const names = field === null || message.includes(field) ||
                  (typeof error === "object" && error.param === field);
    if (check(good && names, `${name}: ${r.status} ${message.slice(0, 110)}`,
              `${r.status} ${r.text.slice(0, 300)}`))
      answered++;
    const health = await request(base, "GET", "/health");
    if (health.status !== 200) check(false, name + ": the server still answers /health");
  }
  console.log(`malformed requests: ${answered} of ${cases.length} answered 4xx with a JSON error`);
  check(cases.length >= 40, "at least 40 malformed cases", cases.length);
  const h = (await request(base, "GET", "/health")).json;
  check(h.jobs.accepted === 0, "none of them was queued", JSON.stringify(h.jobs));
  // Off the 64-pixel grid: generated at the aligned size, as the reference does.
  const good = await request(base, "POST", T2I,
                             { json: { prompt: "still here", steps: 1, width: 200, height: 152 } });
  check(good.status === 200 && good.json.images.length === 1, "the server still generates",
        good.text.slice(0, 200));
  if (good.status === 200) {
    const ihdr = Buffer.from(good.json.images[0], "base64");
    const size = `${ihdr.readUInt32BE(16)}x${ihdr.readUInt32BE(20)}`;
    check(size === "256x192", "200x152 generates aligned up to 256x192", size);
  }

  // A full queue; then Ctrl-C during a generation with a second request queued: both
  // requests are answered, the server exits 0.
  const running = request(base, "POST", T2I, { json: { prompt: "long", steps: 40 } });
  const queued = request(base, "POST", GEN, { json: { prompt: "queued", size: "64x64" } });
  for (let h = null; !h || h.queue.generating !== 1 || h.queue.queued !== 1;) {
    await sleep(50);
    h = (await request(base, "GET", "/health")).json;
  }
  const full = await request(base, "POST", NATIVE, { json: { prompt: "one too many" } });
  check(full.status === 429 && full.json && full.json.error.code === "queue_full",
        "a full queue (--max-queue-size 2) answers 429 with a JSON error", full.status + " " + full.text);
  const stopped = stopServer(server, "SIGINT");
  for (const [name, reply] of [["the generating request", await running],
                               ["the queued request", await queued]])
    check(reply.status === 503 && reply.json && reply.json.error,
          name + " is answered 503 with a JSON error on Ctrl-C", reply.status + " " + reply.text);
  await stopped;
}, ["--max-body-size", "1", "--max-queue-size", "2", "--cfg-scale", "1", "--steps", "1"]);
