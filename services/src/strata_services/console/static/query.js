// EXPLAIN as a pruning funnel: files, row groups and bytes left after each stage of the cascade, each as a bar
// against what the time range started from; then the query itself, its rows as a table.

import { post } from "./api.js";
import { bytes, count, el, errorBox } from "./dom.js";

const MEASURES = [["files", "files", count], ["row_groups", "row groups", count], ["bytes", "bytes", bytes]];

function bar(value, total, format) {
  const pct = total > 0 ? Math.max(0.5, (100 * value) / total) : 0;
  return el("div", { class: "bar" }, el("div", { style: `width:${value ? pct : 0}%` }), el("span", {}, format(value)));
}

export function funnel(plan) {
  const stages = plan.stages;
  if (stages.length === 0) return el("p", { class: "empty" }, "no stage ran: the index has no file in the time range");
  const first = stages[0];
  const totals = Object.fromEntries(MEASURES.map(([key]) => [key, first[`${key}_before`]]));
  const rows = [{ stage: "published", values: totals },
    ...stages.map((s) => ({ stage: s.stage, values: Object.fromEntries(MEASURES.map(([key]) => [key, s[`${key}_after`]])) }))];
  return el("div", { class: "funnel" },
    el("div", { class: "head" }, "stage"), MEASURES.map(([, title]) => el("div", { class: "head" }, title)),
    rows.map((row) => [el("div", { class: "stage", "data-stage": row.stage }, row.stage.replaceAll("_", " ")),
      MEASURES.map(([key, , format]) => bar(row.values[key], totals[key], format))]));
}

function facts(plan) {
  const range = plan.time_range;
  const engine = plan.engine ? `${plan.engine.engine ?? "none"} (${plan.engine.reason})` : "–";
  return el("div", { class: "plan-facts" },
    el("span", {}, "index ", el("b", {}, plan.index_id)),
    el("span", {}, "time range ", el("b", {}, range.source === "default_lookback" ? `default lookback ${range.default_lookback_secs} s` : "from WHERE")),
    el("span", {}, "reads ", el("b", {}, `${count(plan.total_files)} files, ${count(plan.total_row_groups)} row groups, ${bytes(plan.total_bytes)}`)),
    el("span", {}, "columns ", el("b", {}, plan.columns.join(", ") || "–")),
    el("span", {}, "engine ", el("b", {}, engine)),
    el("span", {}, "planned in ", el("b", {}, `${plan.planning_ms.toFixed(1)} ms`)));
}

export async function explain(sql, container) {
  container.replaceChildren(el("p", { class: "empty" }, "planning…"));
  try {
    const plan = await post("query/explain", { sql });
    container.replaceChildren(facts(plan), funnel(plan));
  } catch (error) {
    container.replaceChildren(errorBox(error));
  }
}

export async function run(sql, container) {
  container.replaceChildren(el("p", { class: "empty" }, "running…"));
  try {
    const result = await post("query", { sql, max_rows: 500 });
    const names = result.columns.map((c) => c.name);
    const s = result.summary;
    container.replaceChildren(
      el("div", { class: "plan-facts" }, el("span", {}, el("b", {}, count(s.rows)), " rows", s.truncated ? " (cut at 500)" : ""),
        el("span", {}, "engine ", el("b", {}, s.engine)), el("span", {}, "scanned ", el("b", {}, `${count(s.files_scanned)} files, ${bytes(s.bytes_scanned)}`)),
        el("span", {}, el("b", {}, `${s.elapsed_ms.toFixed(0)} ms`))),
      el("div", { class: "result-table" }, el("table", { class: "result" },
        el("thead", {}, el("tr", {}, names.map((n) => el("th", {}, n)))),
        el("tbody", {}, result.rows.map((row) => el("tr", {}, names.map((n) => el("td", {}, row[n] === null ? "null" : String(row[n])))))))));
  } catch (error) {
    container.replaceChildren(errorBox(error));
  }
}
