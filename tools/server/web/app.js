// The sd-server web page: a form over the native async API (/sdcpp/v1), live progress by
// polling the job, the results with their parameters, and this session's job history.
"use strict";

const $ = (id) => document.getElementById(id);
const POLL_MS = 300;
const HISTORY_KEY = "sd-server-history";

const state = {
  current: null,    // id of the job shown in "Current job"
  active: null,     // id of the job being polled
  history: [],      // {id, prompt, created, status, images?, error?}
};

function apiError(body, status) {
  if (body && body.error) {
    if (typeof body.error === "string") return body.error;
    if (body.error.message) return body.error.message;
  }
  return "HTTP " + status;
}

async function api(method, path, body) {
  const options = { method, headers: {} };
  if (body !== undefined) {
    options.headers["Content-Type"] = "application/json";
    options.body = JSON.stringify(body);
  }
  const response = await fetch(path, options);
  let data = null;
  try { data = await response.json(); } catch (e) { data = null; }
  return { status: response.status, ok: response.ok, data };
}

function setOptions(select, names, chosen) {
  select.textContent = "";
  for (const name of names) {
    const option = document.createElement("option");
    option.value = name;
    option.textContent = name === "default" ? "default (the model's)" : name;
    select.appendChild(option);
  }
  if (names.includes(chosen)) select.value = chosen;
}

async function loadCapabilities() {
  const { ok, data } = await api("GET", "/sdcpp/v1/capabilities");
  if (!ok || !data) throw new Error("cannot read /sdcpp/v1/capabilities");
  $("model-name").textContent = data.model ? data.model.name : "";
  const d = data.defaults || {};
  const sp = d.sample_params || {};
  setOptions($("sampler"), data.samplers || ["default"], sp.sample_method);
  setOptions($("scheduler"), data.schedulers || ["default"], sp.scheduler);
  if (d.prompt) $("prompt").value = d.prompt;
  if (d.negative_prompt) $("negative_prompt").value = d.negative_prompt;
  if (d.width) $("width").value = d.width;
  if (d.height) $("height").value = d.height;
  if (sp.sample_steps) $("steps").value = sp.sample_steps;
  if (sp.guidance && sp.guidance.txt_cfg !== undefined) $("cfg_scale").value = sp.guidance.txt_cfg;
  if (d.seed !== undefined) $("seed").value = d.seed;
  if (d.batch_count) $("batch_count").value = d.batch_count;
  const limits = data.limits || {};
  for (const id of ["width", "height"]) {
    if (limits.min_width) $(id).min = limits.min_width;
    if (limits.max_width) $(id).max = limits.max_width;
  }
  if (limits.max_batch_count) $("batch_count").max = limits.max_batch_count;
  if (limits.max_steps) $("steps").max = limits.max_steps;
}

async function pollHealth() {
  const badge = $("server-status");
  try {
    const { ok, data } = await api("GET", "/health");
    if (!ok || !data) throw new Error();
    const { queued, generating } = data.queue;
    // "generating" alone while the only job runs; the waiting ones are "in queue".
    const parts = [];
    if (generating) parts.push("generating");
    if (queued) parts.push(queued + " in queue");
    badge.textContent = parts.length ? parts.join(" · ") : "ready";
    badge.className = "badge " + (parts.length ? "busy" : "ok");
  } catch (e) {
    badge.textContent = "unreachable";
    badge.className = "badge down";
  }
}

function number(id) {
  return Number($(id).value);
}

function requestBody() {
  return {
    prompt: $("prompt").value,
    negative_prompt: $("negative_prompt").value,
    width: number("width"),
    height: number("height"),
    seed: number("seed"),
    batch_count: number("batch_count"),
    sample_params: {
      sample_method: $("sampler").value,
      scheduler: $("scheduler").value,
      sample_steps: number("steps"),
      guidance: { txt_cfg: number("cfg_scale") },
    },
  };
}

function showError(message) {
  const p = $("form-error");
  p.textContent = message || "";
  p.hidden = !message;
}

function entry(id) {
  return state.history.find((e) => e.id === id);
}

function saveHistory() {
  const light = state.history.map(({ id, prompt, created, status, error }) =>
    ({ id, prompt, created, status, error }));
  try { sessionStorage.setItem(HISTORY_KEY, JSON.stringify(light)); } catch (e) { /* full */ }
}

function renderHistory() {
  const list = $("history");
  list.textContent = "";
  $("history-empty").hidden = state.history.length > 0;
  for (const e of state.history) {
    const li = document.createElement("li");
    li.dataset.id = e.id;
    const badge = document.createElement("span");
    badge.className = "badge status-" + e.status;
    badge.textContent = e.status;
    const time = document.createElement("span");
    time.className = "muted";
    time.textContent = new Date(e.created * 1000).toLocaleTimeString();
    const prompt = document.createElement("span");
    prompt.className = "prompt";
    prompt.textContent = e.prompt || "(empty prompt)";
    li.append(badge, time, prompt);
    for (const image of e.images || []) {
      const img = document.createElement("img");
      img.src = image.src;
      img.alt = "seed " + image.seed;
      li.appendChild(img);
    }
    li.addEventListener("click", () => showJob(e.id));
    list.appendChild(li);
  }
}

function renderResults(e) {
  const results = $("results");
  results.textContent = "";
  for (const image of (e && e.images) || []) {
    const figure = document.createElement("figure");
    const img = document.createElement("img");
    img.className = "result-image";
    img.src = image.src;
    img.alt = "seed " + image.seed;
    img.width = image.width;
    img.height = image.height;
    const caption = document.createElement("figcaption");
    const pre = document.createElement("pre");
    pre.className = "parameters";
    pre.textContent = image.parameters;
    caption.appendChild(pre);
    figure.append(img, caption);
    results.appendChild(figure);
  }
}

// The job status's latest step preview (sd-server --preview, proj by default), or none.
function showPreview(preview) {
  const img = $("preview");
  if (!preview || !preview.b64_json) {
    img.hidden = true;
    img.removeAttribute("src");
    return;
  }
  img.src = "data:" + (preview.mime_type || "image/png") + ";base64," + preview.b64_json;
  img.title = "step " + preview.step;
  img.hidden = false;
}

function renderJob(job) {
  const status = $("job-status");
  status.dataset.status = job.status;
  const p = job.progress || {};
  let text = "";
  if (job.status === "queued") {
    text = "queued" + (job.queue_position ? " · position " + job.queue_position : "");
  } else if (job.status === "generating") {
    text = p.steps ? "step " + p.step + "/" + p.steps : "preparing";
    if (p.images > 1) text += " · image " + (p.image + 1) + "/" + p.images;
  } else if (job.status === "completed") {
    text = "done";
  } else if (job.error) {
    text = job.error.message;
  }
  status.textContent = "Job " + job.id + ": " + job.status;
  showPreview(job.status === "generating" ? job.preview : null);
  $("progress").value = job.status === "completed" ? 1 : (p.fraction || 0);
  $("progress-text").textContent = text;
  $("cancel").disabled = !(job.status === "queued" || job.status === "generating");
}

function showJob(id) {
  const e = entry(id);
  if (!e) return;
  state.current = id;
  const status = $("job-status");
  status.dataset.status = e.status;
  status.textContent = "Job " + e.id + ": " + e.status;
  $("progress").value = e.status === "completed" ? 1 : 0;
  $("progress-text").textContent = e.error || (e.images ? "" : "images not kept in this page");
  showPreview(null);
  $("cancel").disabled = state.active !== id;
  renderResults(e);
}

async function poll(id) {
  const e = entry(id);
  while (state.active === id) {
    let reply;
    try {
      reply = await api("GET", "/sdcpp/v1/jobs/" + encodeURIComponent(id));
    } catch (err) {
      await new Promise((r) => setTimeout(r, 1000));
      continue;
    }
    if (!reply.ok) {
      e.status = reply.status === 410 ? "expired" : "failed";
      e.error = apiError(reply.data, reply.status);
      break;
    }
    const job = reply.data;
    // The badge follows the job from "in queue" to "generating" at once, not at the next poll.
    if (job.status !== e.status) pollHealth();
    e.status = job.status;
    if (state.current === id) renderJob(job);
    if (job.status === "completed") {
      const mime = job.result.mime_type || "image/png";
      e.images = job.result.images.map((image) => ({
        src: "data:" + mime + ";base64," + image.b64_json,
        seed: image.seed, width: image.width, height: image.height,
        parameters: image.parameters,
      }));
      break;
    }
    if (job.status === "failed" || job.status === "cancelled") {
      e.error = job.error ? job.error.message : job.status;
      break;
    }
    renderHistory();
    await new Promise((r) => setTimeout(r, POLL_MS));
  }
  if (state.active === id) state.active = null;
  $("generate").disabled = false;
  pollHealth();
  saveHistory();
  renderHistory();
  if (state.current === id) {
    if (e.images) renderResults(e);
    $("cancel").disabled = true;
  }
}

async function generate(event) {
  event.preventDefault();
  showError("");
  $("generate").disabled = true;
  let reply;
  try {
    reply = await api("POST", "/sdcpp/v1/img_gen", requestBody());
  } catch (err) {
    showError("the server cannot be reached");
    $("generate").disabled = false;
    return;
  }
  if (!reply.ok) {
    showError(apiError(reply.data, reply.status));
    $("generate").disabled = false;
    return;
  }
  const job = reply.data;
  state.history.unshift({ id: job.id, prompt: $("prompt").value, created: job.created, status: job.status });
  state.current = job.id;
  state.active = job.id;
  $("results").textContent = "";
  renderJob({ id: job.id, status: job.status, queue_position: job.queue_position });
  saveHistory();
  renderHistory();
  pollHealth();
  poll(job.id);
}

async function cancel() {
  const id = state.current;
  if (!id) return;
  $("cancel").disabled = true;
  const reply = await api("POST", "/sdcpp/v1/jobs/" + encodeURIComponent(id) + "/cancel");
  if (!reply.ok && reply.status !== 409) showError(apiError(reply.data, reply.status));
}

function restoreHistory() {
  try {
    const saved = JSON.parse(sessionStorage.getItem(HISTORY_KEY) || "[]");
    if (Array.isArray(saved)) state.history = saved;
  } catch (e) {
    state.history = [];
  }
  renderHistory();
}

async function main() {
  $("gen-form").addEventListener("submit", generate);
  $("cancel").addEventListener("click", cancel);
  restoreHistory();
  pollHealth();
  setInterval(pollHealth, 5000);
  try {
    await loadCapabilities();
    document.body.dataset.ready = "true";
  } catch (e) {
    showError(e.message);
  }
}

main();
