// PostgreSQL against the bucket's commit log (POST /v1/metastore/verify, admin key). Run on demand, not on every
// refresh: it replays the log. Shows agreement, or each kind of drift with its count (README, "Losing
// PostgreSQL").

import { count, el } from "./dom.js";

export function verifyResult(report) {
  const after = report.checkpoint_seq === null ? "since the first entry" : `after checkpoint ${report.checkpoint_seq}`;
  if (report.agrees) {
    return el("p", { class: "agrees", "data-agrees": "yes" },
      `PostgreSQL and the bucket agree (${count(report.entries_checked)} entries ${after})`);
  }
  const kinds = Object.entries(report.drift).filter(([, n]) => n > 0);
  return el("table", { id: "drift-table", "data-agrees": "no" },
    el("thead", {}, el("tr", {}, el("th", {}, "drift"), el("th", {}, "count"))),
    el("tbody", {}, kinds.map(([kind, n]) => el("tr", { "data-kind": kind }, el("td", {}, kind.replaceAll("_", " ")),
      el("td", {}, count(n))))));
}
