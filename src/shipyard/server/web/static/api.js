// @ts-check
// The master's REST API (/api/v1), as the pages use it. Every call takes an optional
// AbortSignal so a page that is left stops its requests.
//
// Every endpoint the UI calls is one "METHOD /path" string below (path parameters in
// braces): tests/server/test_ui_endpoints.py checks each against the master's OpenAPI
// schema, and web/test/api.test.js checks that every call goes through one of them.

const BASE = "/api/v1";

export const ROUTES = {
  master: "GET /master",
  experiments: "GET /experiments",
  experiment: "GET /experiments/{id}",
  // Without its trials: what a page about one of them shows of the experiment.
  experimentSummary: "GET /experiments/{id}/summary",
  metricNames: "GET /experiments/{id}/metric-names",
  curves: "GET /experiments/{id}/curves",
  trial: "GET /trials/{id}",
  trialMetrics: "GET /trials/{id}/metrics",
  trialLogs: "GET /trials/{id}/logs",
  trialCheckpoints: "GET /trials/{id}/checkpoints",
  // Trials of every experiment; query: state, restarted, limit.
  trials: "GET /trials",
  checkpointDownload: "GET /checkpoints/{uuid}/download",
  jobs: "GET /jobs",
  slots: "GET /slots",
  pools: "GET /resource-pools",
};

// The buttons of actions.js, one endpoint each.
export const ACTION_ROUTES = {
  pause: "POST /experiments/{id}/pause",
  activate: "POST /experiments/{id}/activate",
  kill: "POST /experiments/{id}/kill",
  archive: "POST /experiments/{id}/archive",
  unarchive: "POST /experiments/{id}/unarchive",
};

/** @typedef {keyof typeof ACTION_ROUTES} ExperimentAction */
/** @typedef {Record<string, string | number | boolean | null | undefined>} Query */
/** @typedef {Record<string, string | number>} PathParams */

export class ApiError extends Error {
  /**
   * @param {number} status
   * @param {string} message
   */
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

// A route's method and its path with the parameters filled in.
/**
 * @param {string} route "METHOD /path/{param}"
 * @param {PathParams} [params]
 * @returns {{method: string, path: string}}
 */
export function resolve(route, params = {}) {
  const [method, template] = route.split(" ");
  const path = template.replace(/\{(\w+)\}/g, (_, name) => {
    if (!(name in params)) throw new Error(`${route}: no value for {${name}}`);
    return encodeURIComponent(String(params[name]));
  });
  return { method, path };
}

/**
 * @param {string} path
 * @param {Query | null | undefined} query
 */
function url(path, query) {
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(query || {})) {
    if (value !== undefined && value !== null && value !== "") params.set(key, String(value));
  }
  const qs = params.toString();
  return BASE + path + (qs ? "?" + qs : "");
}

/**
 * @param {string} route
 * @param {PathParams | null} params
 * @param {{query?: Query | null, signal?: AbortSignal}} [options]
 * @returns {Promise<any>} the answer's JSON
 */
async function request(route, params, { query, signal } = {}) {
  const { method, path } = resolve(route, params || {});
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

/** @typedef {number | string} Id */
/** @typedef {AbortSignal | undefined} Signal */

export const api = {
  /** @param {Signal} [signal] */
  master: (signal) => request(ROUTES.master, null, { signal }),
  /** @param {Query} [query] @param {Signal} [signal] */
  experiments: (query, signal) => request(ROUTES.experiments, null, { query: { limit: 10000, ...query }, signal }),
  /** @param {Id} id @param {Signal} [signal] */
  experiment: (id, signal) => request(ROUTES.experiment, { id }, { signal }),
  /** @param {Id} id @param {Signal} [signal] */
  experimentSummary: (id, signal) => request(ROUTES.experimentSummary, { id }, { signal }),
  /** @param {Id} id @param {Signal} [signal] */
  metricNames: (id, signal) => request(ROUTES.metricNames, { id }, { signal }),
  /** @param {Id} id @param {Query} query @param {Signal} [signal] */
  curves: (id, query, signal) => request(ROUTES.curves, { id }, { query, signal }),
  /** @param {Id} id @param {ExperimentAction} action */
  experimentAction: (id, action) => request(ACTION_ROUTES[action], { id }),
  /** @param {Id} id @param {Signal} [signal] */
  trial: (id, signal) => request(ROUTES.trial, { id }, { signal }),
  /** @param {Id} id @param {Query} query @param {Signal} [signal] */
  trialMetrics: (id, query, signal) => request(ROUTES.trialMetrics, { id }, { query, signal }),
  /** @param {Id} id @param {Query} query @param {Signal} [signal] */
  trialLogs: (id, query, signal) => request(ROUTES.trialLogs, { id }, { query, signal }),
  /** @param {Id} id @param {Signal} [signal] */
  trialCheckpoints: (id, signal) => request(ROUTES.trialCheckpoints, { id }, { signal }),
  /** @param {Query} query @param {Signal} [signal] */
  trials: (query, signal) => request(ROUTES.trials, null, { query, signal }),
  // A link, not a request: the browser downloads the tar.
  /** @param {string} uuid */
  checkpointDownloadUrl: (uuid) => BASE + resolve(ROUTES.checkpointDownload, { uuid }).path,
  /** @param {Signal} [signal] */
  jobs: (signal) => request(ROUTES.jobs, null, { signal }),
  /** @param {Signal} [signal] */
  slots: (signal) => request(ROUTES.slots, null, { signal }),
  /** @param {Signal} [signal] */
  pools: (signal) => request(ROUTES.pools, null, { signal }),
};

/** @param {unknown} error */
export function isAbort(error) {
  return typeof error === "object" && error !== null && "name" in error && error.name === "AbortError";
}
