// The console's page: the key, the refresh loop, the index list with its indexing lag, and the wiring of the
// windows picture, the debt chart, the deletes, the two queues, the metastore check and the query box.

import { get, hasKey, post, setKey } from "./api.js";
import { debtChart } from "./debt.js";
import { deletesTable } from "./deletes.js";
import { count, el, errorBox, replace, seconds } from "./dom.js";
import { verifyResult } from "./metastore.js";
import { explain, run } from "./query.js";
import { showQueue } from "./queues.js";
import { windowsChart } from "./windows.js";

const REFRESH_MS = 5000;
const DEBT_MINUTES = 15;
const state = { indexes: [], selected: null, measure: "splits", timer: null, busy: false };
const $ = (id) => document.getElementById(id);

function status(text, isError = false) {
  $("status").textContent = text;
  $("status").classList.toggle("error", isError);
}

function lagCell(lag, maxWaiting) {
  if (!lag || lag.files_waiting === 0) return el("span", { class: "empty" }, "up to date");
  const width = Math.max(4, Math.round((60 * lag.files_waiting) / Math.max(1, maxWaiting)));
  return el("span", {}, el("span", { class: "lagbar", style: `width:${width}px` }),
    `${count(lag.files_waiting)} files waiting, oldest ${seconds(lag.oldest_waiting_secs)}`);
}

function renderIndexes(indexes, lags) {
  const byId = Object.fromEntries(lags.map((l) => [l.index_id, l]));
  const maxWaiting = Math.max(0, ...lags.map((l) => l.files_waiting));
  if (indexes.length === 0) return el("p", { class: "empty" }, "no index yet: create one with POST /v1/indexes");
  return el("table", { id: "index-table" },
    el("thead", {}, el("tr", {}, el("th", {}, "index"), el("th", {}, "window"), el("th", {}, "sort schema"),
      el("th", {}, "timestamp"), el("th", {}, "indexing lag"))),
    el("tbody", {}, indexes.map((index) => el("tr", {
      class: `selectable${index.index_id === state.selected ? " selected" : ""}`, "data-index": index.index_id,
      onclick: () => selectIndex(index.index_id),
    }, el("td", {}, el("b", {}, index.index_id)), el("td", {}, `${index.config.window_duration_secs / 60} min`),
    el("td", {}, el("code", {}, index.config.sort_schema || "–")), el("td", {}, index.config.timestamp_field),
    el("td", {}, lagCell(byId[index.index_id], maxWaiting))))));
}

async function refreshIndexes() {
  try {
    const [page, lag] = await Promise.all([get("indexes?limit=1000"), get("indexing/lag")]);
    state.indexes = page.indexes;
    if (!state.selected || !state.indexes.some((i) => i.index_id === state.selected)) {
      state.selected = state.indexes.length ? state.indexes[0].index_id : null;
      prefillSql();
    }
    replace($("indexes"), renderIndexes(state.indexes, lag.indexes));
  } catch (error) {
    replace($("indexes"), errorBox(error));
    throw error;
  }
}

async function refreshWindows() {
  const index = state.indexes.find((i) => i.index_id === state.selected);
  $("windows-title").textContent = index ? `of ${index.index_id}, newest 48` : "";
  if (!index) { replace($("windows"), el("p", { class: "empty" }, "select an index")); return; }
  try {
    const page = await get(`indexes/${encodeURIComponent(index.index_id)}/windows?limit=48`);
    replace($("windows"), windowsChart(page, index, state.measure, Date.now() / 1000));
  } catch (error) {
    replace($("windows"), errorBox(error));
  }
}

async function refreshDebt() {
  const index = state.indexes.find((i) => i.index_id === state.selected);
  $("debt-title").textContent = index ? `of ${index.index_id}, last ${DEBT_MINUTES} minutes` : "";
  if (!index) { replace($("debt"), el("p", { class: "empty" }, "select an index")); return; }
  const path = `indexes/${encodeURIComponent(index.index_id)}/debt`;
  try {
    const [debt, history] = await Promise.all([get(path), get(`${path}/history?minutes=${DEBT_MINUTES}`)]);
    replace($("debt"), debtChart(debt, history, DEBT_MINUTES, Date.parse(debt.measured_at) / 1000));
  } catch (error) {
    replace($("debt"), errorBox(error));
  }
}

async function refreshDeletes() {
  const index = state.indexes.find((i) => i.index_id === state.selected);
  $("deletes-title").textContent = index ? `of ${index.index_id}, newest first` : "";
  if (!index) { replace($("deletes"), el("p", { class: "empty" }, "select an index")); return; }
  try {
    replace($("deletes"), deletesTable(await get(`indexes/${encodeURIComponent(index.index_id)}/deletes?limit=20`)));
  } catch (error) {
    replace($("deletes"), errorBox(error));
  }
}

async function refresh() {
  if (!hasKey() || state.busy) return;
  state.busy = true;
  status("refreshing…");
  try {
    await refreshIndexes();
    await Promise.all([refreshWindows(), refreshDebt(), refreshDeletes(), showQueue("compaction", $("compaction")), showQueue("indexing", $("indexing"))]);
    status(`updated ${new Date().toLocaleTimeString()}`);
  } catch (error) {
    status(error.status === 401 ? "key refused" : `error: ${error.message}`, true);
  } finally {
    state.busy = false;
  }
}

function selectIndex(indexId) {
  state.selected = indexId;
  prefillSql(true);
  refresh();
}

function prefillSql(force = false) {
  const box = $("sql");
  if (state.selected && (force || !box.value.trim() || box.dataset.prefilled === "yes")) {
    box.value = `SELECT * FROM "${state.selected}" LIMIT 20`;
    box.dataset.prefilled = "yes";
  }
}

function schedule() {
  clearInterval(state.timer);
  if ($("auto-refresh").checked) state.timer = setInterval(refresh, REFRESH_MS);
}

function start() {
  // A key handed over in the fragment (never sent to a server) is taken once and removed from the address bar.
  const fragment = new URLSearchParams(location.hash.slice(1));
  if (fragment.get("key")) {
    setKey(fragment.get("key"));
    history.replaceState(null, "", location.pathname + location.search);
  }
  $("key-form").addEventListener("submit", (event) => {
    event.preventDefault();
    setKey($("key-input").value);
    $("key-input").value = "";
    $("welcome").hidden = hasKey();
    refresh();
  });
  $("auto-refresh").addEventListener("change", schedule);
  for (const button of document.querySelectorAll("[data-measure]")) {
    button.addEventListener("click", () => {
      state.measure = button.dataset.measure;
      document.querySelectorAll("[data-measure]").forEach((b) => b.classList.toggle("active", b === button));
      refreshWindows();
    });
  }
  $("sql").addEventListener("input", () => { $("sql").dataset.prefilled = "no"; });
  $("query-form").addEventListener("submit", (event) => {
    event.preventDefault();
    explain($("sql").value, $("explain"));
  });
  $("run-query").addEventListener("click", () => run($("sql").value, $("result")));
  $("verify-metastore").addEventListener("click", async () => {
    replace($("metastore"), el("p", { class: "empty" }, "verifying..."));
    try {
      replace($("metastore"), verifyResult(await post("metastore/verify")));
    } catch (error) {
      replace($("metastore"), errorBox(error));
    }
  });
  $("welcome").hidden = hasKey();
  schedule();
  refresh();
}

start();
