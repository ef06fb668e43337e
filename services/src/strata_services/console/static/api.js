// The APIs, through this page's own origin: the proxy routes each /v1 path to the API that serves it.

export class ApiError extends Error {
  constructor(status, message, requestId) {
    super(message);
    this.status = status;
    this.requestId = requestId;
  }
}

let key = sessionStorage.getItem("strata-key") || "";

export function setKey(value) {
  key = value.trim();
  if (key) sessionStorage.setItem("strata-key", key);
  else sessionStorage.removeItem("strata-key");
}

export function hasKey() {
  return key !== "";
}

export async function call(method, path, body, accept = "application/json") {
  const headers = { Authorization: `Bearer ${key}`, Accept: accept };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  let response;
  try {
    response = await fetch(`/v1/${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  } catch (error) {
    throw new ApiError(0, `the proxy did not answer: ${error.message}`, null);
  }
  const text = await response.text();
  let data = null;
  try { data = text ? JSON.parse(text) : null; } catch { data = null; }
  if (!response.ok) {
    const detail = (data && (data.detail || data.title)) || text || response.statusText;
    throw new ApiError(response.status, detail, response.headers.get("x-request-id"));
  }
  return data;
}

export const get = (path) => call("GET", path);
export const post = (path, body) => call("POST", path, body);
