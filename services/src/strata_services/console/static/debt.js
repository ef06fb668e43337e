// Compaction and indexing debt of one index: today's numbers (GET /v1/indexes/{id}/debt) and, over the last
// minutes, the samples planner-api keeps every 10 s (…/debt/history), one small chart per measure on one time
// axis. Each has its own scale: closed windows not final are a handful where splits waiting may be thousands.

import { bytes, count, el, seconds, svg } from "./dom.js";

const WIDTH = 1200;
const ROW = 70;
const MARGIN = { left: 56, right: 240, top: 8, bottom: 26 };
const SERIES = [
  { key: "splits_waiting", label: "splits waiting", color: "#2f6fde" },
  { key: "closed_windows_not_final", label: "closed windows not final", color: "#cf3b3b" },
  { key: "indexing_files_waiting", label: "indexing files waiting", color: "#d98c10" },
];

function clockSecs(epochSecs) {
  return new Date(epochSecs * 1000).toISOString().slice(11, 19);
}

function facts(debt) {
  const c = debt.compaction;
  const delay = c.first_merge_delay_secs;
  return el("div", { class: "plan-facts debt-facts" },
    el("span", {}, el("b", {}, count(c.splits_waiting)), ` splits waiting (${bytes(c.bytes_waiting)}) of `,
      el("b", {}, count(debt.published_splits)), " published"),
    el("span", {}, "oldest waiting ", el("b", {}, seconds(c.oldest_waiting_split_age_secs))),
    el("span", {}, el("b", {}, count(c.closed_windows_not_final)), " closed windows not final",
      c.oldest_closed_window_not_final_age_secs === null ? "" : `, oldest closed ${seconds(c.oldest_closed_window_not_final_age_secs)} ago`),
    el("span", {}, el("b", {}, c.merges_per_sec.toFixed(2)), " merges/s, ", el("b", {}, count(Math.round(c.rows_merged_per_sec))), " rows/s"),
    el("span", {}, "first merge p50 ", el("b", {}, seconds(delay.p50)), ", p90 ", el("b", {}, seconds(delay.p90))),
    el("span", {}, el("b", {}, count(debt.indexing.files_waiting)), " files waiting for artifacts"));
}

export function debtChart(debt, history, minutes, nowSecs) {
  const samples = history.samples.map((s) => ({ ...s, t: Date.parse(s.sampled_at) / 1000 }));
  const top = facts(debt);
  if (samples.length === 0) return el("div", {}, top, el("p", { class: "empty" }, "no samples yet (planner-api samples every 10 s)"));
  const start = nowSecs - minutes * 60;
  const plotW = WIDTH - MARGIN.left - MARGIN.right;
  const x = (t) => MARGIN.left + Math.min(1, Math.max(0, (t - start) / (nowSecs - start))) * plotW;
  const height = MARGIN.top + SERIES.length * ROW + MARGIN.bottom;
  const chart = svg("svg", { viewBox: `0 0 ${WIDTH} ${height}`, width: "100%", role: "img", class: "debt-chart",
    "aria-label": `debt of ${history.index_id} over the last ${minutes} minutes`, "data-samples": samples.length });
  SERIES.forEach((series, row) => {
    const values = samples.map((s) => s[series.key]);
    const yMax = Math.max(1, ...values);
    const rowTop = MARGIN.top + row * ROW;
    const y = (v) => rowTop + ROW - 12 - (v / yMax) * (ROW - 20);
    const points = samples.map((s) => `${x(s.t).toFixed(1)},${y(s[series.key]).toFixed(1)}`).join(" ");
    const last = samples[samples.length - 1];
    chart.append(svg("g", { class: "debt-series", "data-series": series.key },
      svg("line", { x1: MARGIN.left, x2: MARGIN.left + plotW, y1: y(0), y2: y(0), stroke: "#e1e4ea" }),
      svg("text", { x: MARGIN.left - 6, y: y(yMax) + 4, "text-anchor": "end", class: "chart-axis" }, count(yMax)),
      svg("text", { x: MARGIN.left - 6, y: y(0) + 4, "text-anchor": "end", class: "chart-axis" }, "0"),
      svg("polyline", { points, fill: "none", stroke: series.color, "stroke-width": 2 }),
      // A single sample is a point, not a line.
      samples.map((s) => svg("circle", { cx: x(s.t), cy: y(s[series.key]), r: samples.length === 1 ? 3 : 1.5, fill: series.color },
        svg("title", {}, `${clockSecs(s.t)} UTC: ${count(s[series.key])} ${series.label}`))),
      svg("text", { x: MARGIN.left + plotW + 10, y: y(last[series.key]) + 4, class: "debt-label", fill: series.color },
        `${count(last[series.key])} ${series.label}`)));
  });
  const axisY = height - MARGIN.bottom + 16;
  for (let i = 0; i <= 4; i += 1) {
    const t = start + ((nowSecs - start) * i) / 4;
    chart.append(svg("text", { x: x(t), y: axisY, "text-anchor": "middle", class: "chart-axis" }, clockSecs(t)));
  }
  const legend = el("div", { class: "legend" },
    SERIES.map((s) => el("span", {}, el("i", { style: `background:${s.color}` }), s.label)),
    el("span", {}, `last ${minutes} minutes, UTC, each measure on its own scale`));
  return el("div", {}, top, chart, legend);
}
