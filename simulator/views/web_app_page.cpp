// The web app's page: inputs on the left, the report section (drawn by the server, the same as
// perf --html) and the search scatter on the right, refreshed as the user types.
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
</style></head>
<body>
<h1>trainsim</h1>
<div id="layout">
<form id="inputs" autocomplete="off" onsubmit="return false">
<label data-key="model">model <select id="model"></select><span class="err"></span></label>
<label data-key="strategy">strategy <select id="strategy"></select><span class="err"></span></label>
<label data-key="system">system <select id="system"></select><span class="err"></span></label>
<details><summary>paste a Hugging Face config.json (replaces the model)</summary>
<label data-key="hf_config"><textarea id="hf_config"></textarea><span class="err"></span></label></details>
<details><summary>paste a Megatron-LM command line (replaces the strategy)</summary>
<label data-key="megatron_args"><textarea id="megatron_args"></textarea><span class="err"></span></label></details>
<fieldset id="strategy-fields"><legend>strategy</legend></fieldset>
<fieldset id="model-fields"><legend>model</legend></fieldset>
<label data-key="set">more overrides, one key=value a line (any model or strategy key)
<textarea id="overrides"></textarea><span class="err"></span></label>
<span class="err" id="err-general"></span>
</form>
<div id="output"><div id="status"></div><div id="report"></div>
<h2>Search</h2>
<label>GPUs <input id="gpus" value="16" size="6"></label>
<label>global batch <input id="gbs" value="64" size="6"></label>
<span class="err" id="err-search"></span>
<div id="search"></div></div>
</div>
<script>
"use strict";
const $ = (id) => document.getElementById(id);
let seq = 0, searchSeq = 0, timer = null, searchTimer = null;

function clearErrors() {
  document.querySelectorAll(".bad").forEach((e) => e.classList.remove("bad"));
  document.querySelectorAll(".err").forEach((e) => { e.textContent = ""; });
}

function showError(field, message, fallback) {
  const label = field ? document.querySelector('[data-key="' + CSS.escape(field) + '"]') : null;
  const span = label ? label.querySelector(".err") : $(fallback);
  if (label) label.classList.add("bad");
  span.textContent = message;
}

async function getJson(url) {
  const r = await fetch(url);
  return r.json();
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

// One input per scalar field of a preset; an edit becomes an override of that key.
async function loadFields(kind) {
  const doc = await getJson("/api/preset?kind=" + kind + "&name=" + encodeURIComponent($(kind).value));
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
    input.addEventListener("input", schedule);
    const err = document.createElement("span");
    err.className = "err";
    label.append(input, err);
    box.appendChild(label);
  }
}

function body() {
  const b = {system: $("system").value, set: {}};
  const hf = $("hf_config").value.trim(), meg = $("megatron_args").value.trim();
  if (hf) b.hf_config = JSON.parse(hf); else b.model = $("model").value;
  if (meg) b.megatron_args = meg; else b.strategy = $("strategy").value;
  document.querySelectorAll("fieldset input").forEach((i) => {
    if (i.value !== i.dataset.orig && !(meg && i.closest("#strategy-fields"))) b.set[i.name] = i.value;
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

async function update() {
  const mine = ++seq;
  let b;
  try {
    b = body();
  } catch (e) {
    clearErrors();
    showError(e.field || "hf_config", e.message || String(e), "err-general");
    return;
  }
  $("status").textContent = "updating…";
  const t0 = performance.now();
  const r = await fetch("/api/report", {method: "POST", headers: {"Content-Type": "application/json"}, body: JSON.stringify(b)});
  const text = await r.text();
  if (mine !== seq) return;  // a newer edit is on its way
  clearErrors();
  if (r.ok) {
    $("report").innerHTML = text;
    $("status").textContent = "updated in " + Math.round(performance.now() - t0) + " ms";
  } else {
    const e = JSON.parse(text);
    showError(e.field, e.error, "err-general");
    $("status").textContent = "input error";
  }
}

async function updateSearch() {
  const mine = ++searchSeq;
  const q = new URLSearchParams({model: $("model").value, system: $("system").value,
                                 gpus: $("gpus").value, gbs: $("gbs").value});
  const r = await fetch("/api/search?" + q);
  const text = await r.text();
  if (mine !== searchSeq) return;
  $("err-search").textContent = "";
  if (r.ok) $("search").innerHTML = text;
  else $("err-search").textContent = JSON.parse(text).error;
}

function schedule() {
  clearTimeout(timer);
  timer = setTimeout(update, 120);
}

function scheduleSearch() {
  clearTimeout(searchTimer);
  searchTimer = setTimeout(updateSearch, 300);
}

async function init() {
  const p = await getJson("/api/presets");
  fillSelect($("model"), p.model, "llama3-8b");
  fillSelect($("strategy"), p.strategy, "tp2-pp2-dp2-zero1");
  fillSelect($("system"), p.system, "h100-sxm-80g");
  await Promise.all([loadFields("model"), loadFields("strategy")]);
  $("model").addEventListener("change", async () => { await loadFields("model"); schedule(); scheduleSearch(); });
  $("strategy").addEventListener("change", async () => { await loadFields("strategy"); schedule(); });
  $("system").addEventListener("change", () => { schedule(); scheduleSearch(); });
  for (const id of ["hf_config", "megatron_args", "overrides"]) $(id).addEventListener("input", schedule);
  for (const id of ["gpus", "gbs"]) $(id).addEventListener("input", scheduleSearch);
  await update();
  await updateSearch();
}
init();
</script>
</body></html>
)PAGE";
  return page;
}

}  // namespace trainsim
