// LoRAs through sd-server: one made for another family (its names and sizes match none of
// the SD 1.5 fixture's weights) is answered 400 while the request is parsed, naming the LoRA
// and why, on each API and in a prompt tag, and nothing is queued; the server keeps serving,
// and a request with the fixture's own kohya LoRA then generates.
"use strict";

const fs = require("node:fs");
const os = require("node:os");
const path = require("node:path");
const { check, fixturePath, request, runWithServer } = require("./common.cjs");

// A safetensors file of zero-filled f32 tensors: [[name, shape], ...].
function safetensors(tensors) {
  const header = {};
  let offset = 0;
  for (const [name, shape] of tensors) {
    const bytes = 4 * shape.reduce((a, b) => a * b, 1);
    header[name] = { dtype: "F32", shape, data_offsets: [offset, offset + bytes] };
    offset += bytes;
  }
  let json = JSON.stringify(header);
  json += " ".repeat((8 - (json.length % 8)) % 8);
  const length = Buffer.alloc(8);
  length.writeBigUInt64LE(BigInt(json.length));
  return Buffer.concat([length, Buffer.from(json, "latin1"), Buffer.alloc(offset)]);
}

// The LoRA folder: the kohya fixture (server_client_setup generates it beside the
// checkpoint) and an SDXL-style LoRA: a second text encoder SD 1.5 lacks, and SD 1.5 names
// with SDXL's sizes (1280 wide where SD 1.5's q_proj is 768).
const loraDir = fs.mkdtempSync(path.join(os.tmpdir(), "sd_server_loras_"));
const kohya = path.join(path.dirname(fixturePath()), "loras", "lora_sd15_kohya_seed7.safetensors");
fs.symlinkSync(kohya, path.join(loraDir, "kohya.safetensors"));
const q = "text_model_encoder_layers_0_self_attn_q_proj";
fs.writeFileSync(path.join(loraDir, "sdxl_style.safetensors"), safetensors([
  [`lora_te2_${q}.lora_down.weight`, [4, 1280]], [`lora_te2_${q}.lora_up.weight`, [1280, 4]],
  [`lora_te1_${q}.lora_down.weight`, [4, 1280]], [`lora_te1_${q}.lora_up.weight`, [1280, 4]],
]));

function errorText(r) {
  const e = r.json && r.json.error;
  return e ? (typeof e === "string" ? e : e.message || "") : "";
}

runWithServer("loras", async (server) => {
  const base = server.base;
  check(fs.existsSync(kohya), "the kohya LoRA fixture exists", kohya);
  const wrong = [
    ["txt2img, prompt tag", "/sdapi/v1/txt2img", { prompt: "a cat <lora:sdxl_style:1>", steps: 1 }],
    ["txt2img, lora field", "/sdapi/v1/txt2img", { prompt: "a cat", steps: 1, lora: [{ path: "sdxl_style" }] }],
    ["native job, lora field", "/sdcpp/v1/img_gen", { prompt: "a cat", lora: [{ path: "sdxl_style", multiplier: 0.5 }] }],
    ["openai, prompt tag", "/v1/images/generations", { prompt: "a cat <lora:sdxl_style:0.7>", size: "64x64" }],
  ];
  for (const [name, route, json] of wrong) {
    const r = await request(base, "POST", route, { json });
    const message = errorText(r);
    check(r.status === 400 && /sdxl_style\.safetensors/.test(message) &&
          /matches none of the SD 1\.x model's weights/.test(message) && /made for SDXL/.test(message),
          `${name}: a LoRA for another family is answered 400 naming it (${message.slice(0, 140)})`,
          `${r.status} ${r.text.slice(0, 300)}`);
    const health = await request(base, "GET", "/health");
    check(health.status === 200, name + ": the server still answers /health");
  }
  const h = (await request(base, "GET", "/health")).json;
  check(h.jobs.accepted === 0, "none of them was queued", JSON.stringify(h.jobs));

  const good = await request(base, "POST", "/sdapi/v1/txt2img",
                             { json: { prompt: "a cat <lora:kohya:0.8>", steps: 1 } });
  check(good.status === 200 && good.json && good.json.images && good.json.images.length === 1,
        "then a request with the SD 1.5 LoRA generates", `${good.status} ${good.text.slice(0, 300)}`);
  check(/LoRA '[^']*kohya\.safetensors' x0\.8 .*792 of 792 tensors applied/.test(server.log()),
        "the server's log shows the LoRA applied");
  fs.rmSync(loraDir, { recursive: true, force: true });
}, ["--lora-model-dir", loraDir, "--cfg-scale", "1", "--steps", "1"]);
