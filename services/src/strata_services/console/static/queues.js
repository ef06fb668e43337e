// A job queue at a glance: how many jobs are in each status, what runs now (stage and progress), and what
// failed: excluded jobs, and jobs retried after a failure, each with its last reason and its failure log.

import { get } from "./api.js";
import { el, errorBox, indexOfUid, when } from "./dom.js";

const STATUSES = ["unassigned", "in_progress", "success", "excluded", "cancelled"];
// Failure logs the user opened stay open across refreshes.
const openLogs = new Set();

export const QUEUES = {
  compaction: { what: (job) => `${indexOfUid(job.index_uid)} · window ${new Date(job.window_start * 1000).toISOString().slice(11, 16)} · ${job.kind} L${job.level}` },
  indexing: { what: (job) => `${indexOfUid(job.index_uid)} · file ${job.split_id.slice(-8)} · ${job.reason}` },
};

export async function loadQueue(queue) {
  const list = (status) => get(`${queue}/jobs?status=${status}&limit=50`).then((page) => page.jobs);
  const [summary, running, waiting, excluded] = await Promise.all(
    [get(`${queue}/summary`), list("in_progress"), list("unassigned"), list("excluded")]);
  return { summary, running, retrying: [...running, ...waiting].filter((j) => j.failures > 0), excluded };
}

function progress(job) {
  const pct = Math.round((job.progress || 0) * 100);
  return el("span", {}, el("span", { class: "progress" }, el("div", { style: `width:${pct}%` })), `${pct}%`);
}

function failureLog(job) {
  const entries = job.failure_log || [];
  if (entries.length === 0) return null;
  const toggled = (event) => {
    if (event.target.open) openLogs.add(job.job_id);
    else openLogs.delete(job.job_id);
  };
  return el("details", { open: openLogs.has(job.job_id), ontoggle: toggled }, el("summary", {}, `failure log (${entries.length})`),
    el("ol", { class: "failure-log" }, entries.map((f) =>
      el("li", {}, `${when(f.at)} · token ${f.fencing_token ?? "–"} · ${f.worker_id ?? "no worker"}: `,
        el("span", { class: "reason" }, f.reason)))));
}

function jobTable(queue, jobs, columns) {
  return el("table", { class: `jobs ${queue}` },
    el("thead", {}, el("tr", {}, columns.map(([title]) => el("th", {}, title)))),
    el("tbody", {}, jobs.map((job) => el("tr", { "data-job-id": job.job_id }, columns.map(([, cell]) => el("td", {}, cell(job)))))));
}

export function renderQueue(queue, data) {
  const describeJob = QUEUES[queue].what;
  const chips = el("div", { class: "chips" }, STATUSES.map((s) =>
    el("span", { class: `chip ${s}`, "data-status": s }, s.replace("_", " "), el("b", {}, data.summary.counts[s] ?? 0))));
  const jobCell = (job) => el("span", {}, el("code", {}, job.job_id.slice(-10)), el("br"), describeJob(job));
  const running = data.running.length
    ? jobTable(queue, data.running, [["job", jobCell], ["stage", (j) => j.stage || "–"], ["progress", progress],
      ["worker · token", (j) => `${j.worker_id || "–"} · ${j.fencing_token ?? "–"}`], ["lease until", (j) => when(j.lease_expires_at)]])
    : el("p", { class: "empty" }, "nothing running");
  const failed = (jobs, empty) => jobs.length
    ? jobTable(queue, jobs, [["job", jobCell], ["status", (j) => el("span", { class: `badge ${j.status}` }, j.status)],
      ["failures", (j) => j.failures], ["last reason", (j) => el("div", {}, el("span", { class: "reason" }, j.last_error || "–"), failureLog(j))]])
    : el("p", { class: "empty" }, empty);
  return [chips, el("h3", {}, "Running"), running, el("h3", {}, "Excluded"), failed(data.excluded, "no excluded job"),
    el("h3", {}, "Retrying after a failure"), failed(data.retrying, "no job is being retried")];
}

export async function showQueue(queue, container) {
  try {
    container.replaceChildren(...renderQueue(queue, await loadQueue(queue)));
  } catch (error) {
    container.replaceChildren(errorBox(error));
  }
}
