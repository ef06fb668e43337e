// The picture of one index's windows: time across, one bar per window, its height the published splits stacked
// by merge level (or its bytes), marked-for-deletion splits on top, open windows hatched, live jobs as a badge,
// and the retention cut-off as a line once the index has retention.

import { bytes, clock, count, day, el, svg, when } from "./dom.js";

const WIDTH = 1200;
const HEIGHT = 250;
const MARGIN = { left: 56, right: 12, top: 26, bottom: 44 };
// SVG presentation attributes take plain colors (the stylesheet's variables hold the same ones).
const LEVEL_COLORS = ["#9cc3f5", "#5a9bea", "#2f6fde", "#1d4aa3", "#10306e"];
const COLORS = { bytes: "#2f6fde", ok: "#2e9b5f", gray: "#a3a9b6", warn: "#d98c10", bad: "#cf3b3b" };

// Issue 12 adds retention to the index configuration and may report the cut-off with the windows; either is drawn.
export function retentionCutoff(index, page, nowSecs) {
  if (page && typeof page.retention_cutoff === "number") return page.retention_cutoff;
  const period = index && index.config && index.config.retention && index.config.retention.period_secs;
  return typeof period === "number" ? nowSecs - period : null;
}

const TICKS = 4;

// The top of the axis: TICKS steps of a round size (whole splits when counting), covering `value`.
function axisMax(value, whole) {
  const raw = Math.max(value, 1) / TICKS;
  const magnitude = 10 ** Math.floor(Math.log10(raw));
  let step = [1, 2, 2.5, 5, 10].map((m) => m * magnitude).find((candidate) => candidate >= raw);
  if (whole) step = Math.max(1, Math.ceil(step));
  return step * TICKS;
}

function describe(w) {
  const levels = Object.entries(w.levels).map(([l, n]) => `level ${l}: ${n}`).join(", ") || "none";
  return [`window ${day(w.window_start)} ${clock(w.window_start)} (${w.window_duration_secs / 60} min)`,
    `${w.closed ? "closed" : "open"}`, `${count(w.splits)} published splits (${levels})`, `${count(w.rows)} rows`,
    `${bytes(w.bytes)}`, `${w.marked_for_deletion} marked for deletion`, `${w.live_jobs} live compaction jobs`,
    `last compacted ${when(w.last_compacted_at)}`].join("\n");
}

function segments(w, measure) {
  if (measure === "bytes") return [{ value: w.bytes, color: COLORS.bytes }];
  const levels = Object.keys(w.levels).map(Number).sort((a, b) => a - b);
  const parts = levels.map((l) => ({ value: w.levels[String(l)], color: LEVEL_COLORS[Math.min(l, 4)] }));
  parts.push({ value: w.marked_for_deletion, color: "url(#marked)" });
  return parts;
}

function defs() {
  return svg("defs", {},
    svg("pattern", { id: "marked", width: 6, height: 6, patternUnits: "userSpaceOnUse", patternTransform: "rotate(45)" },
      svg("rect", { width: 6, height: 6, fill: "#d5d8df" }), svg("line", { x1: 0, y1: 0, x2: 0, y2: 6, stroke: "#9aa1ae", "stroke-width": 2 })),
    svg("pattern", { id: "open", width: 7, height: 7, patternUnits: "userSpaceOnUse", patternTransform: "rotate(45)" },
      svg("line", { x1: 0, y1: 0, x2: 0, y2: 7, stroke: "rgba(255,255,255,.55)", "stroke-width": 3 })));
}

export function windowsChart(page, index, measure, nowSecs) {
  const windows = [...page.windows].sort((a, b) => a.window_start - b.window_start);
  if (windows.length === 0) return el("p", { class: "empty" }, "no published splits yet");
  const plotW = WIDTH - MARGIN.left - MARGIN.right;
  const plotH = HEIGHT - MARGIN.top - MARGIN.bottom;
  const band = plotW / windows.length;
  const barW = Math.max(2, Math.min(48, band * 0.72));
  const totals = windows.map((w) => segments(w, measure).reduce((sum, s) => sum + s.value, 0));
  const yMax = axisMax(Math.max(...totals), measure !== "bytes");
  const y = (v) => MARGIN.top + plotH - (v / yMax) * plotH;
  const chart = svg("svg", { viewBox: `0 0 ${WIDTH} ${HEIGHT}`, width: "100%", role: "img", class: "windows-chart",
    "aria-label": `windows of ${page.index_id}` }, defs());

  for (let i = 0; i <= TICKS; i += 1) {
    const value = (yMax * i) / TICKS;
    chart.append(svg("line", { x1: MARGIN.left, x2: WIDTH - MARGIN.right, y1: y(value), y2: y(value), stroke: "#edf0f4" }),
      svg("text", { x: MARGIN.left - 6, y: y(value) + 4, "text-anchor": "end", class: "chart-axis" },
        measure === "bytes" ? bytes(value) : count(Math.round(value))));
  }
  const labelEvery = Math.ceil(windows.length / 16);
  windows.forEach((w, i) => {
    const x = MARGIN.left + i * band + (band - barW) / 2;
    const group = svg("g", { class: "window", "data-window-start": w.window_start }, svg("title", {}, describe(w)));
    let base = 0;
    for (const part of segments(w, measure)) {
      if (!part.value) continue;
      group.append(svg("rect", { x, y: y(base + part.value), width: barW, height: y(base) - y(base + part.value), fill: part.color }));
      base += part.value;
    }
    if (!w.closed && base > 0) {
      group.append(svg("rect", { x, y: y(base), width: barW, height: y(0) - y(base), fill: "url(#open)" }));
    }
    group.append(svg("rect", { x, y: y(0) + 3, width: barW, height: 4, fill: w.closed ? COLORS.gray : COLORS.ok }));
    if (w.live_jobs > 0) {
      const cy = y(base) - 11;
      group.append(svg("circle", { cx: x + barW / 2, cy, r: 8, fill: COLORS.warn }),
        svg("text", { x: x + barW / 2, y: cy + 4, "text-anchor": "middle", "font-size": 10, fill: "#fff", "font-weight": 700 }, w.live_jobs));
    }
    if (i % labelEvery === 0) {
      const newDay = i === 0 || day(windows[i - labelEvery].window_start) !== day(w.window_start);
      group.append(svg("text", { x: x + barW / 2, y: HEIGHT - MARGIN.bottom + 22, "text-anchor": "middle", class: "chart-axis" }, clock(w.window_start)));
      if (newDay) group.append(svg("text", { x: x + barW / 2, y: HEIGHT - MARGIN.bottom + 36, "text-anchor": "middle", class: "chart-axis" }, day(w.window_start)));
    }
    chart.append(group);
  });

  const cutoff = retentionCutoff(index, page, nowSecs);
  let cutoffNote = "retention: none configured";
  if (cutoff !== null) {
    cutoffNote = `retention cut-off ${day(cutoff)} ${clock(cutoff)}`;
    const first = windows[0].window_start;
    const last = windows[windows.length - 1];
    const span = last.window_start + last.window_duration_secs - first;
    const fraction = Math.min(1, Math.max(0, (cutoff - first) / span));
    const cx = MARGIN.left + fraction * plotW;
    chart.append(svg("g", { class: "retention-cutoff" },
      svg("line", { x1: cx, x2: cx, y1: MARGIN.top - 14, y2: y(0), stroke: COLORS.bad, "stroke-dasharray": "5 4", "stroke-width": 2 }),
      svg("text", { x: cx + 4, y: MARGIN.top - 6, "font-size": 11, fill: COLORS.bad }, "retention cut-off")));
  }

  const legend = el("div", { class: "legend" },
    measure === "splits"
      ? [0, 1, 2, 3].map((l) => el("span", {}, el("i", { style: `background:${LEVEL_COLORS[l]}` }), `level ${l}${l === 3 ? "+" : ""}`))
      : el("span", {}, el("i", { style: "background:var(--l2)" }), "published bytes"),
    measure === "splits" ? el("span", {}, el("i", { style: "background:#c4c8d0" }), "marked for deletion") : null,
    el("span", {}, el("i", { style: "background:var(--ok)" }), "open window (hatched)"),
    el("span", {}, el("i", { style: "background:var(--gray)" }), "closed window"),
    el("span", {}, el("i", { style: "background:var(--warn);border-radius:50%" }), "live compaction jobs"),
    el("span", { class: "retention-note" }, cutoffNote),
    el("span", {}, "window starts in UTC"),
    el("span", {}, `${windows.length} windows, ${count(windows.reduce((n, w) => n + w.splits, 0))} splits, ${bytes(windows.reduce((n, w) => n + w.bytes, 0))}`));
  return el("div", {}, chart, legend);
}
