// Row-level deletes of one index (GET /v1/indexes/{id}/deletes): each with its status, how far its rewrite is,
// and, once it succeeded, what its receipt says (splits rewritten, splits left unchanged, rows removed).

import { count, el } from "./dom.js";

function progress(d) {
  const p = d.progress;
  if (d.status === "succeeded") {
    const r = d.receipt || { splits_rewritten: 0, splits_unchanged: 0, rows_removed: 0 };
    // Covered splits holding no matching row are kept as they are, not rewritten.
    const unchanged = r.splits_unchanged ? `, ${count(r.splits_unchanged)} unchanged` : "";
    return `${count(r.splits_rewritten)} splits rewritten${unchanged}, ${count(r.rows_removed)} rows removed`;
  }
  return `${count(p.splits_done)}/${count(p.splits_covered)} splits` + (p.splits_rewriting ? `, ${p.splits_rewriting} rewriting` : "");
}

export function deletesTable(page) {
  if (page.deletes.length === 0) return el("p", { class: "empty" }, "no delete on this index");
  return el("table", { id: "deletes-table" },
    el("thead", {}, el("tr", {}, el("th", {}, "delete"), el("th", {}, "status"), el("th", {}, "accepted"),
      el("th", {}, "where"), el("th", {}, "progress"))),
    el("tbody", {}, page.deletes.map((d) => el("tr", { class: `delete-${d.status}`, "data-delete": d.delete_id },
      el("td", {}, el("code", {}, d.delete_id)), el("td", {}, el("b", {}, d.status)),
      el("td", {}, new Date(d.cutoff.accepted_at).toLocaleString()), el("td", {}, el("code", {}, d.where)),
      el("td", {}, d.error ? `${progress(d)}: ${d.error}` : progress(d))))));
}
