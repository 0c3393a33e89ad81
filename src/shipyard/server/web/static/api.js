// The master's REST API (/api/v1), as the pages use it. Every call takes an optional
// AbortSignal so a page that is left stops its requests.

const BASE = "/api/v1";

export class ApiError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

function url(path, query) {
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(query || {})) {
    if (value !== undefined && value !== null && value !== "") params.set(key, value);
  }
  const qs = params.toString();
  return BASE + path + (qs ? "?" + qs : "");
}

async function request(method, path, { query, signal } = {}) {
  const response = await fetch(url(path, query), {
    method,
    signal,
    headers: { accept: "application/json" },
  });
  const body = await response.json().catch(() => null);
  signal?.throwIfAborted(); // reading the body may have failed because of the abort
  if (!response.ok) {
    // The master's errors: {"error": {"type", "message", "details"}}.
    const message = body?.error?.message || response.statusText;
    throw new ApiError(response.status, `${method} ${path}: ${message}`);
  }
  return body;
}

const get = (path, query, signal) => request("GET", path, { query, signal });
const post = (path, signal) => request("POST", path, { signal });

export const api = {
  master: (signal) => get("/master", null, signal),
  experiments: (query, signal) => get("/experiments", { limit: 10000, ...query }, signal),
  experiment: (id, signal) => get(`/experiments/${id}`, null, signal),
  // Without its trials: what a page about one of them shows of the experiment.
  experimentSummary: (id, signal) => get(`/experiments/${id}/summary`, null, signal),
  metricNames: (id, signal) => get(`/experiments/${id}/metric-names`, null, signal),
  curves: (id, query, signal) => get(`/experiments/${id}/curves`, query, signal),
  experimentAction: (id, action) => post(`/experiments/${id}/${action}`),
  trial: (id, signal) => get(`/trials/${id}`, null, signal),
  trialMetrics: (id, query, signal) => get(`/trials/${id}/metrics`, query, signal),
  trialLogs: (id, query, signal) => get(`/trials/${id}/logs`, query, signal),
  trialCheckpoints: (id, signal) => get(`/trials/${id}/checkpoints`, null, signal),
  // Trials of every experiment; query: state, restarted, limit.
  trials: (query, signal) => get("/trials", query, signal),
  checkpointDownloadUrl: (uuid) => `${BASE}/checkpoints/${encodeURIComponent(uuid)}/download`,
  jobs: (signal) => get("/jobs", null, signal),
  slots: (signal) => get("/slots", null, signal),
  pools: (signal) => get("/resource-pools", null, signal),
};

export function isAbort(error) {
  return error && error.name === "AbortError";
}
