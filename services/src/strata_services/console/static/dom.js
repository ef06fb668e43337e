// DOM and formatting helpers. Every value from the APIs enters the page as text or an attribute, never as markup.

const SVG_NS = "http://www.w3.org/2000/svg";

function build(node, attrs, children) {
  for (const [name, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (name.startsWith("on") && typeof value === "function") node.addEventListener(name.slice(2), value);
    // Through the CSSOM: the page's content security policy refuses style attributes.
    else if (name === "style") node.style.cssText = value;
    else node.setAttribute(name, value === true ? "" : String(value));
  }
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

export function el(tag, attrs, ...children) {
  return build(document.createElement(tag), attrs, children);
}

export function svg(tag, attrs, ...children) {
  return build(document.createElementNS(SVG_NS, tag), attrs, children);
}

export function replace(container, ...children) {
  container.replaceChildren(...children.flat(Infinity).filter((c) => c !== null && c !== undefined && c !== false));
}

export function bytes(n) {
  if (n === null || n === undefined) return "–";
  const units = ["B", "KB", "MB", "GB", "TB"];
  let value = n;
  let unit = 0;
  while (value >= 1000 && unit < units.length - 1) { value /= 1000; unit += 1; }
  return `${value >= 100 || unit === 0 ? value.toFixed(0) : value.toFixed(1)} ${units[unit]}`;
}

export function count(n) {
  return n === null || n === undefined ? "–" : Number(n).toLocaleString("en-US");
}

export function seconds(s) {
  if (s === null || s === undefined) return "–";
  if (s < 90) return `${s.toFixed(0)} s`;
  if (s < 5400) return `${(s / 60).toFixed(0)} min`;
  return `${(s / 3600).toFixed(1)} h`;
}

export function clock(epochSecs) {
  return new Date(epochSecs * 1000).toISOString().slice(11, 16);
}

export function day(epochSecs) {
  return new Date(epochSecs * 1000).toISOString().slice(0, 10);
}

export function when(iso) {
  return iso ? iso.replace("T", " ").slice(0, 19) : "–";
}

export function indexOfUid(uid) {
  return uid.split(":")[0];
}

export function errorBox(error) {
  const id = error.requestId ? ` (request ${error.requestId})` : "";
  return el("div", { class: "error-box" }, `${error.status ? error.status + ": " : ""}${error.message}${id}`);
}
