// The web app's page, a view of one request: presets or pasted documents (a Hugging Face
// config.json, a Megatron-LM command line) fill the fields with what they set, edits apply on top
// as overrides; the report section (drawn by the server, the same as perf --html) and the search
// of the same plan on the right, refreshed as the user types.
#include "views/web_api.h"

namespace trainsim {

const std::string& web_app_page() {
  static const std::string page = R"PAGE(<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>trainsim</title><link rel="icon" href="data:,">
<style>
body{font:14px sans-serif;margin:16px;color:#222}
#layout{display:flex;gap:24px;align-items:flex-start}
#inputs{width:340px;flex:none}
#inputs label{display:block;margin:4px 0}
#inputs input,#inputs select{width:150px;float:right}
#inputs textarea{width:100%;height:90px;font:12px monospace}
fieldset{margin:8px 0;max-height:360px;overflow:auto}
.err{color:#c00;display:block;font-size:12px;clear:both}
.bad input,.bad textarea,.bad select{outline:2px solid #c00}
#output{flex:1;min-width:0}
svg.plot{display:block;margin:18px 0;max-width:100%;height:auto}svg text{font:12px sans-serif}svg text.t{font-weight:bold;font-size:14px}
table{border-collapse:collapse}td,th{padding:3px 10px;text-align:right;border-bottom:1px solid #ddd}
td:first-child,th:first-child{text-align:left}
#status{color:#666;font-size:12px}
.stale{opacity:.35}
</style></head>
<body>
<h1>trainsim</h1>
<div id="layout">
<form id="inputs" autocomplete="off" onsubmit="return false">
<label data-key="model">model <select id="model"></select><span class="err"></span></label>
<label data-key="strategy">strategy <select id="strategy"></select><span class="err"></span></label>
<label data-key="system">system <select id="system"></select><span class="err"></span></label>
<label data-key="system-file">or upload a system JSON <input type="file" id="system-file" accept=".json,application/json"><span class="err"></span></label>
<details open><summary>paste a Hugging Face config.json (replaces the model)</summary>
<label data-key="hf_config"><textarea id="hf_config"></textarea><span class="err"></span></label></details>
<details open><summary>paste a Megatron-LM command line (replaces the strategy; its model flags describe the model when no config.json is pasted)</summary>
<label data-key="megatron_args"><textarea id="megatron_args"></textarea><span class="err"></span></label></details>
<div id="sources"></div>
<fieldset id="strategy-fields"><legend>strategy (edits apply on top)</legend></fieldset>
<fieldset id="model-fields"><legend>model (edits apply on top)</legend></fieldset>
<label data-key="set">more overrides, one key=value a line (any model, strategy or system key)
<textarea id="overrides"></textarea><span class="err"></span></label>
<span class="err" id="err-general"></span>
</form>
<div id="output"><div id="status"></div><div id="report"></div>
<h2>Search</h2>
<p id="search-scope">the plan's model, system, switches, world size and global batch</p>
<label data-key="gpus">GPUs <input id="gpus" size="6" placeholder="plan's"><span class="err"></span></label>
<label data-key="gbs">global batch <input id="gbs" size="6" placeholder="plan's"><span class="err"></span></label>
<span class="err" id="err-search"></span>
<div id="search"></div></div>
</div>
<script>
"use strict";
const $ = (id) => document.getElementById(id);
const LINE_MODEL = "";  // the model select's value: the pasted command line's model flags
let seq = 0, searchSeq = 0, resolveSeq = 0, timer = null, searchTimer = null, resolveTimer = null;
let uploaded = null;   // {name, doc}: an uploaded system document
let lastPreset = "llama3-8b";
let lastStrategy = "tp2-pp2-dp2-zero1";
let tryLineModel = true;

// The preset a select names; its "(pasted ...)" entries stand for the pasted documents.
function presetOf(id, fallback) {
  const v = $(id).value;
  return v === LINE_MODEL || v === "__hf__" || v === "__line__" ? fallback : v;
}  // a newly pasted command line may describe the model; a preset picked after it wins

function clearErrors(scope) {
  (scope || document).querySelectorAll(".bad").forEach((e) => e.classList.remove("bad"));
  (scope || document).querySelectorAll(".err").forEach((e) => { if (e.id !== "err-search") e.textContent = ""; });
}

function showError(field, message, fallback) {
  const label = field ? document.querySelector('#inputs [data-key="' + CSS.escape(field) + '"]') : null;
  const span = label ? label.querySelector(".err") : $(fallback);
  if (label) label.classList.add("bad");
  span.textContent = message;
}

async function getJson(url) {
  const r = await fetch(url);
  return r.json();
}

async function post(path, b) {
  const r = await fetch(path, {method: "POST", headers: {"Content-Type": "application/json"}, body: JSON.stringify(b)});
  return {ok: r.ok, text: await r.text()};
}

function fillSelect(sel, names, chosen) {
  sel.innerHTML = "";
  for (const n of names) {
    const o = document.createElement("option");
    o.value = o.textContent = n;
    if (n === chosen) o.selected = true;
    sel.appendChild(o);
  }
}

function addOption(sel, value, text) {
  const o = document.createElement("option");
  o.value = value;
  o.textContent = text;
  sel.appendChild(o);
  return o;
}

// One input per scalar field of the resolved document; an edit becomes an override of that key,
// applied on top of the presets or pasted inputs.
function fillFields(kind, doc) {
  const box = $(kind + "-fields");
  box.querySelectorAll("label").forEach((e) => e.remove());
  for (const [k, v] of Object.entries(doc)) {
    if (v === null || typeof v === "object") continue;
    const label = document.createElement("label");
    label.dataset.key = k;
    label.textContent = k + " ";
    const input = document.createElement("input");
    input.name = k;
    input.id = "field-" + k;
    input.value = String(v);
    input.dataset.orig = String(v);
    input.addEventListener("input", () => { schedule(); scheduleSearch(); });
    const err = document.createElement("span");
    err.className = "err";
    label.append(input, err);
    box.appendChild(label);
  }
}

// The inputs the fields are read from: presets, pasted documents, the chosen system.
function baseBody() {
  const b = {};
  const sys = $("system").value;
  b.system = sys === "__upload__" && uploaded ? uploaded.doc : sys;
  const hf = $("hf_config").value.trim(), meg = $("megatron_args").value.trim();
  if (hf) {
    try {
      b.hf_config = JSON.parse(hf);
    } catch (e) {
      throw {field: "hf_config", message: "hf_config: not JSON: " + e.message};
    }
  } else if (!(meg && $("model").value === LINE_MODEL)) {
    b.model = presetOf("model", lastPreset);
  }
  if (meg) b.megatron_args = meg; else b.strategy = presetOf("strategy", lastStrategy);
  return b;
}

// The request: the base, every edited field and the free overrides on top.
function body() {
  const b = baseBody();
  b.set = {};
  document.querySelectorAll("fieldset input").forEach((i) => {
    if (i.value !== i.dataset.orig) b.set[i.name] = i.value;
  });
  for (const line of $("overrides").value.split("\n")) {
    const t = line.trim();
    if (!t) continue;
    const eq = t.indexOf("=");
    if (eq < 1) throw {field: "set", message: "expected key=value, got '" + t + "'"};
    b.set[t.slice(0, eq).trim()] = t.slice(eq + 1).trim();
  }
  return b;
}

// The base changed (a preset picked, a document pasted): the fields show what it sets.
async function resolve() {
  const mine = ++resolveSeq;
  const hf = $("hf_config").value.trim(), meg = $("megatron_args").value.trim();
  // The selects say what the fields come from.
  $("strategy").disabled = !!meg;
  $("strategy").value = meg ? "__line__" : presetOf("strategy", lastStrategy);
  $("model").disabled = !!hf;
  if (hf) $("model").value = "__hf__";
  else if ($("model").value === "__hf__") $("model").value = lastPreset;
  let b, r;
  try {
    b = baseBody();
  } catch (e) {
    clearErrors();
    showError(e.field, e.message, "err-general");
    return;
  }
  if (meg && !hf && tryLineModel && $("model").value !== LINE_MODEL) {
    // A command line that describes the whole model is the model; else the preset stays.
    const own = Object.assign({}, b);
    delete own.model;
    const t = await post("/api/resolve", own);
    if (mine !== resolveSeq) return;
    if (t.ok) { $("model").value = LINE_MODEL; b = own; r = t; }
  } else if (!hf && !meg && $("model").value === LINE_MODEL) {
    $("model").value = lastPreset;
    b.model = lastPreset;
  }
  if (!r) r = await post("/api/resolve", b);
  if (mine !== resolveSeq) return;
  clearErrors($("inputs"));
  if (!r.ok) {
    const e = JSON.parse(r.text);
    showError(e.field, e.error, "err-general");
    $("status").textContent = "input error: the report below is of the last valid inputs";
    $("report").classList.add("stale");
    return;
  }
  const d = JSON.parse(r.text);
  fillFields("strategy", d.strategy);
  fillFields("model", d.model);
  $("sources").textContent = "model: " + d.model_source + "; strategy: " + d.strategy_source;
  $("gpus").placeholder = d.strategy.world_size;
  $("gbs").placeholder = d.global_batch_size;
  await update();
  scheduleSearch();
}

async function update() {
  const mine = ++seq;
  let b;
  try {
    b = body();
  } catch (e) {
    clearErrors($("inputs"));
    showError(e.field || "hf_config", e.message || String(e), "err-general");
    return;
  }
  $("status").textContent = "updating…";
  const t0 = performance.now();
  const r = await post("/api/report", b);
  if (mine !== seq) return;  // a newer edit is on its way
  clearErrors($("inputs"));
  if (r.ok) {
    $("report").innerHTML = r.text;
    $("report").classList.remove("stale");
    $("status").textContent = "updated in " + Math.round(performance.now() - t0) + " ms";
  } else {
    const e = JSON.parse(r.text);
    showError(e.field, e.error, "err-general");
    $("status").textContent = "input error: the report below is of the last valid inputs";
    $("report").classList.add("stale");
  }
}

async function updateSearch() {
  const mine = ++searchSeq;
  let b;
  try {
    b = body();
  } catch (e) {
    return;  // update() shows the error
  }
  if ($("gpus").value.trim()) b.gpus = $("gpus").value.trim();
  if ($("gbs").value.trim()) b.gbs = $("gbs").value.trim();
  $("search").setAttribute("aria-busy", "true");
  const r = await post("/api/search", b);
  if (mine !== searchSeq) return;
  $("search").removeAttribute("aria-busy");
  $("err-search").textContent = "";
  for (const id of ["gpus", "gbs"]) clearErrors(document.querySelector('[data-key="' + id + '"]'));
  if (r.ok) {
    $("search").innerHTML = r.text;
  } else {
    const e = JSON.parse(r.text);
    $("search").innerHTML = "";
    if (e.field === "gpus" || e.field === "gbs") showError(e.field, e.error, "err-search");
    else $("err-search").textContent = "search: " + e.error;
  }
}

function schedule() {
  clearTimeout(timer);
  timer = setTimeout(update, 120);
}

function scheduleSearch() {
  clearTimeout(searchTimer);
  searchTimer = setTimeout(updateSearch, 300);
}

function scheduleResolve() {
  clearTimeout(resolveTimer);
  resolveTimer = setTimeout(resolve, 150);
}

function uploadSystem(file) {
  const reader = new FileReader();
  reader.onload = () => {
    const label = document.querySelector('[data-key="system-file"]');
    clearErrors(label);
    let doc;
    try {
      doc = JSON.parse(reader.result);
    } catch (e) {
      showError("system-file", file.name + ": not JSON: " + e.message);
      return;
    }
    uploaded = {name: file.name, doc: doc};
    let o = $("system").querySelector('option[value="__upload__"]');
    if (!o) o = addOption($("system"), "__upload__", "");
    o.textContent = "uploaded: " + file.name;
    $("system").value = "__upload__";
    schedule();
    scheduleSearch();
  };
  reader.readAsText(file);
}

async function init() {
  const p = await getJson("/api/presets");
  fillSelect($("model"), p.model, "llama3-8b");
  addOption($("model"), LINE_MODEL, "(the command line's model flags)");
  addOption($("model"), "__hf__", "(the pasted config.json)");
  fillSelect($("strategy"), p.strategy, "tp2-pp2-dp2-zero1");
  addOption($("strategy"), "__line__", "(the pasted command line)");
  fillSelect($("system"), p.system, "h100-sxm-80g");
  $("model").addEventListener("change", () => {
    lastPreset = presetOf("model", lastPreset);
    tryLineModel = $("model").value === LINE_MODEL;
    scheduleResolve();
  });
  $("strategy").addEventListener("change", () => { lastStrategy = presetOf("strategy", lastStrategy); scheduleResolve(); });
  $("system").addEventListener("change", () => { schedule(); scheduleSearch(); });
  $("system-file").addEventListener("change", (e) => { if (e.target.files[0]) uploadSystem(e.target.files[0]); });
  $("hf_config").addEventListener("input", scheduleResolve);
  $("megatron_args").addEventListener("input", () => { tryLineModel = true; scheduleResolve(); });
  $("overrides").addEventListener("input", () => { schedule(); scheduleSearch(); });
  for (const id of ["gpus", "gbs"]) $(id).addEventListener("input", scheduleSearch);
  await resolve();
}
init();
</script>
</body></html>
)PAGE";
  return page;
}

}  // namespace trainsim
