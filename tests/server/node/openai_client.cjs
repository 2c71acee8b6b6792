// The real `openai` npm client (installed by setup.sh) against sd-server: list the models,
// generate through /v1/images/generations (with native options in <sd_cpp_extra_args>),
// edit through /v1/images/edits, and see a refused request come back as the client's
// BadRequestError.
"use strict";

const { requireClient, check, decodePng, seedOf, runWithServer } = require("./common.cjs");

const OpenAI = requireClient("openai");

runWithServer("openai_client", async (server) => {
  const client = new OpenAI({ apiKey: "sk-local", baseURL: server.base + "/v1", maxRetries: 0,
                              timeout: 600000 });

  const models = await client.models.list();
  check(models.data.length === 1 && models.data[0].id === "sd-cpp-local", "models.list()",
        JSON.stringify(models.data));

  const result = await client.images.generate({
    model: "sd-cpp-local",
    prompt: "a lighthouse at dusk <sd_cpp_extra_args>{\"seed\": 4242}</sd_cpp_extra_args>",
    n: 1,
    size: "64x64",
    response_format: "b64_json",
  });
  check(Array.isArray(result.data) && result.data.length === 1 && result.data[0].b64_json,
        "images.generate() returns one b64_json image");
  const png = decodePng(Buffer.from(result.data[0].b64_json, "base64"));
  check(png.width === 64 && png.height === 64, "the image is 64x64", `${png.width}x${png.height}`);
  check(seedOf(png.text.parameters) === 4242, "the image was sampled with the seed asked for",
        png.text.parameters);
  check(/a lighthouse at dusk/.test(png.text.parameters), "its parameters carry the prompt");

  const edited = await client.images.edit({
    image: await OpenAI.toFile(Buffer.from(result.data[0].b64_json, "base64"), "in.png",
                               { type: "image/png" }),
    prompt: "a lighthouse at night <sd_cpp_extra_args>{\"strength\": 0.5}</sd_cpp_extra_args>",
    n: 1,
    size: "64x64",
    response_format: "b64_json",
  });
  check(edited.data.length === 1 && edited.data[0].b64_json, "images.edit() returns one image");

  try {
    await client.images.generate({ prompt: "x", size: "100000x100000" });
    check(false, "an oversized request is refused");
  } catch (e) {
    check(e instanceof OpenAI.BadRequestError && e.status === 400 && /size/.test(e.message),
          "an oversized request is the client's BadRequestError naming size", String(e));
  }
}, ["--cfg-scale", "1", "--steps", "1"]);
