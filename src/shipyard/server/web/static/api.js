// @ts-check
// The master's REST API (/api/v1), as the pages use it. Every call takes an optional
// AbortSignal so a page that is left stops its requests.
//
// Every endpoint the UI calls is one "METHOD /path" string below (path parameters in
// braces): tests/server/test_ui_endpoints.py checks each against the master's OpenAPI
// schema, and web/test/api.test.js checks that every call goes through one of them.
//
// The browser's credentials are the master's session cookie (auth.js): every request sends
// it, every write its CSRF header too, and an answer 401 sends the browser to the login page.

import { CSRF_HEADER, csrfToken, toLogin } from "./auth.js";

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
  // What a run of the trial ran (query: run_id; default the latest that captured one), and
  // what two trials ran differently (query: rank, whose capture; default 0).
  trialEnvironment: "GET /trials/{id}/environment",
  trialDiff: "GET /trials/{id}/diff/{other}",
  // The files a trial logged (ctx.artifacts), and one's bytes: an image's src, or a text
  // or table read as text.
  trialArtifacts: "GET /trials/{id}/artifacts",
  artifactContent: "GET /trials/{id}/artifacts/{artifact}/content",
  // Trials of every experiment; query: state, restarted, limit.
  trials: "GET /trials",
  checkpointDownload: "GET /checkpoints/{uuid}/download",
  // The model registry (query: workspace, archived); a model with its versions and aliases
  // (query: workspace); a version with its lineage.
  models: "GET /models",
  model: "GET /models/{name}",
  modelVersion: "GET /models/{name}/versions/{version}",
  jobs: "GET /jobs",
  slots: "GET /slots",
  pools: "GET /resource-pools",
  // The login page and the top bar: who is logged in, logging in and out (the cookie).
  whoami: "GET /auth/whoami",
  login: "POST /auth/login",
  logout: "POST /auth/logout",
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
   * @param {string} [reason] the master's message alone (message names the request too)
   */
  constructor(status, message, reason = message) {
    super(message);
    this.status = status;
    this.reason = reason;
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

// Writes carry the CSRF token the session cookie came with; a JSON body is sent as JSON.
/**
 * @param {string} method
 * @param {unknown} json
 */
function headersFor(method, json) {
  /** @type {Record<string, string>} */
  const headers = { accept: "application/json" };
  if (json !== undefined) headers["content-type"] = "application/json";
  if (method !== "GET" && method !== "HEAD") {
    const token = csrfToken();
    if (token) headers[CSRF_HEADER] = token;
  }
  return headers;
}

/**
 * @param {string} route
 * @param {PathParams | null} params
 * @param {{query?: Query | null, signal?: AbortSignal, json?: unknown, text?: boolean}} [options]
 * @returns {Promise<any>} the answer's JSON (null when it has none), or with `text` its text
 */
async function request(route, params, { query, signal, json, text } = {}) {
  const { method, path } = resolve(route, params || {});
  const response = await fetch(url(path, query), {
    method,
    signal,
    credentials: "same-origin",
    headers: headersFor(method, json),
    body: json === undefined ? undefined : JSON.stringify(json),
  });
  const body = text && response.ok ? await response.text() : await response.json().catch(() => null);
  signal?.throwIfAborted(); // reading the body may have failed because of the abort
  if (!response.ok) {
    // Not logged in, or no longer: to the login page (the error still reaches the caller,
    // whose poller stops; the page is left anyway).
    if (response.status === 401) toLogin();
    // The master's errors: {"error": {"type", "message", "details"}}.
    const message = body?.error?.message || response.statusText;
    throw new ApiError(response.status, `${method} ${path}: ${message}`, message);
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
  /** @param {Id} id @param {Query} query @param {Signal} [signal] */
  trialEnvironment: (id, query, signal) => request(ROUTES.trialEnvironment, { id }, { query, signal }),
  /** @param {Id} id @param {Id} other @param {Query} query @param {Signal} [signal] */
  trialDiff: (id, other, query, signal) => request(ROUTES.trialDiff, { id, other }, { query, signal }),
  /** @param {Id} id @param {Signal} [signal] */
  trialArtifacts: (id, signal) => request(ROUTES.trialArtifacts, { id }, { signal }),
  /** @param {Id} id @param {Id} artifact @param {Signal} [signal] @returns {Promise<string>} */
  artifactText: (id, artifact, signal) => request(ROUTES.artifactContent, { id, artifact }, { signal, text: true }),
  // A link, not a request: an <img> shows it, a download link saves it.
  /** @param {Id} id @param {Id} artifact */
  artifactContentUrl: (id, artifact) => BASE + resolve(ROUTES.artifactContent, { id, artifact }).path,
  /** @param {Query} query @param {Signal} [signal] */
  trials: (query, signal) => request(ROUTES.trials, null, { query, signal }),
  // A link, not a request: the browser downloads the tar.
  /** @param {string} uuid */
  checkpointDownloadUrl: (uuid) => BASE + resolve(ROUTES.checkpointDownload, { uuid }).path,
  /** @param {Query} query @param {Signal} [signal] */
  models: (query, signal) => request(ROUTES.models, null, { query, signal }),
  /** @param {string} name @param {Query} query @param {Signal} [signal] */
  model: (name, query, signal) => request(ROUTES.model, { name }, { query, signal }),
  /** @param {string} name @param {Id} version @param {Query} query @param {Signal} [signal] */
  modelVersion: (name, version, query, signal) => request(ROUTES.modelVersion, { name, version }, { query, signal }),
  /** @param {Signal} [signal] */
  jobs: (signal) => request(ROUTES.jobs, null, { signal }),
  /** @param {Signal} [signal] */
  slots: (signal) => request(ROUTES.slots, null, { signal }),
  /** @param {Signal} [signal] */
  pools: (signal) => request(ROUTES.pools, null, { signal }),
  /** @param {Signal} [signal] */
  whoami: (signal) => request(ROUTES.whoami, null, { signal }),
  // The answer sets the session cookie (mode "cookie": no token in the answer).
  /** @param {string} username @param {string} password */
  login: (username, password) => request(ROUTES.login, null, { json: { username, password, mode: "cookie" } }),
  logout: () => request(ROUTES.logout, null),
};

/** @param {unknown} error */
export function isAbort(error) {
  return typeof error === "object" && error !== null && "name" in error && error.name === "AbortError";
}
