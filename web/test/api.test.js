// The UI's calls to the master (static/api.js): each goes through one of its declared
// routes (the ones tests/server/test_ui_endpoints.py finds in the master's OpenAPI schema).
import assert from "node:assert/strict";
import { afterEach, test } from "node:test";

import { ACTION_ROUTES, ApiError, ROUTES, api, isAbort, resolve } from "../../src/shipyard/server/web/static/api.js";

const realFetch = globalThis.fetch;
afterEach(() => {
  globalThis.fetch = realFetch;
  delete globalThis.document;
  delete globalThis.location;
});

// fetch answers `body` with `status`, and keeps what was asked.
function answer(body, status = 200) {
  const calls = [];
  globalThis.fetch = async (url, init) => {
    calls.push({ url: String(url), method: init.method });
    return new Response(JSON.stringify(body), { status, statusText: "Not Found" });
  };
  return calls;
}

// fetch answers 200 and keeps each request's init (credentials, headers, body).
function record() {
  const inits = [];
  globalThis.fetch = async (url, init) => {
    inits.push({ url: String(url), ...init });
    return new Response("{}", { status: 200 });
  };
  return inits;
}

// "GET /experiments/{id}" matches "GET /api/v1/experiments/7?limit=3".
function matchesRoute(route, call) {
  const [method, template] = route.split(" ");
  const pattern = new RegExp("^/api/v1" + template.replace(/\{\w+\}/g, "[^/?]+") + "(\\?|$)");
  return method === call.method && pattern.test(call.url);
}

test("every call of api goes through one of the declared routes", async () => {
  const calls = answer({});
  const all = Object.values(ROUTES).concat(Object.values(ACTION_ROUTES));
  await api.master();
  await api.experiments({ state: "ACTIVE" });
  await api.experiment(7);
  await api.experimentSummary(7);
  await api.metricNames(7);
  await api.curves(7, { name: "loss" });
  for (const action of Object.keys(ACTION_ROUTES)) await api.experimentAction(7, action);
  await api.trial(3);
  await api.trialMetrics(3, { max_points: 10 });
  await api.trialLogs(3, { after: 0 });
  await api.trialCheckpoints(3);
  await api.trialEnvironment(3, { run_id: 1 });
  await api.trialDiff(3, 4, { rank: 0 });
  await api.trialArtifacts(3);
  await api.artifactText(3, 5);
  await api.trials({ limit: 5 });
  await api.models({ archived: false });
  await api.model("digits", { workspace: "team b" });
  await api.modelVersion("digits", 2, {});
  await api.jobs();
  await api.slots();
  await api.pools();
  await api.whoami();
  await api.login("ada", "secret");
  await api.logout();
  // Every function of api was called (checkpointDownloadUrl and artifactContentUrl are
  // links: checked below).
  assert.equal(calls.length, Object.keys(api).length - 3 + Object.keys(ACTION_ROUTES).length);
  for (const call of calls) assert.ok(all.some((route) => matchesRoute(route, call)), `${call.method} ${call.url}`);
  const link = { method: "GET", url: api.checkpointDownloadUrl("ab/c") };
  assert.equal(link.url, "/api/v1/checkpoints/ab%2Fc/download");
  assert.ok(matchesRoute(ROUTES.checkpointDownload, link));
  const image = { method: "GET", url: api.artifactContentUrl(3, 5) };
  assert.equal(image.url, "/api/v1/trials/3/artifacts/5/content");
  assert.ok(matchesRoute(ROUTES.artifactContent, image));
});

test("path parameters are filled in, query values left out when empty", async () => {
  const calls = answer([]);
  await api.experiments({ state: null, archived: "false", q: "" });
  await api.experimentAction(12, "pause");
  assert.deepEqual(calls, [
    { url: "/api/v1/experiments?limit=10000&archived=false", method: "GET" },
    { url: "/api/v1/experiments/12/pause", method: "POST" },
  ]);
  assert.throws(() => resolve(ROUTES.trial, {}), /no value for \{id\}/);
});

test("the master's error message reaches the page", async () => {
  answer({ error: { type: "NotFound", message: "trial 9 does not exist" } }, 404);
  await assert.rejects(api.trial(9), (error) => {
    assert.ok(error instanceof ApiError);
    assert.equal(error.status, 404);
    assert.equal(error.message, "GET /trials/9: trial 9 does not exist");
    return true;
  });
});

test("an aborted request is told from a failed one", () => {
  assert.ok(isAbort(new DOMException("left", "AbortError")));
  assert.ok(!isAbort(new ApiError(500, "boom")));
  assert.ok(!isAbort(null));
});

test("every request sends the session cookie, every write its CSRF token", async () => {
  globalThis.document = { cookie: "theme=dark; shipyard_csrf=Zx-9_a; other=1" };
  const inits = record();
  await api.trial(3);
  await api.experimentAction(12, "kill");
  assert.ok(inits.every((init) => init.credentials === "same-origin"));
  assert.equal(inits[0].headers["X-CSRF-Token"], undefined); // a read needs none
  assert.equal(inits[1].headers["X-CSRF-Token"], "Zx-9_a");
});

test("a write without a session sends no CSRF header", async () => {
  globalThis.document = { cookie: "" };
  const inits = record();
  await api.experimentAction(12, "pause");
  assert.equal("X-CSRF-Token" in inits[0].headers, false);
});

test("logging in asks for the cookie, not a token, in a JSON body", async () => {
  const inits = record();
  await api.login("ada", "pa ss");
  assert.equal(inits[0].method, "POST");
  assert.equal(inits[0].url, "/api/v1/auth/login");
  assert.equal(inits[0].headers["content-type"], "application/json");
  assert.deepEqual(JSON.parse(inits[0].body), { username: "ada", password: "pa ss", mode: "cookie" });
});

test("a 401 sends the browser to the login page once, which comes back here", async () => {
  const went = [];
  globalThis.location = { pathname: "/experiments/3", search: "?tab=trials", replace: (href) => went.push(href) };
  answer({ error: { type: "Unauthorized", message: "log in first" } }, 401);
  await assert.rejects(api.experiment(3), (error) => {
    assert.ok(error instanceof ApiError);
    assert.equal(error.status, 401);
    assert.equal(error.reason, "log in first");
    return true;
  });
  await assert.rejects(api.trials({}), ApiError); // several pollers refused at once
  assert.deepEqual(went, ["/login?next=%2Fexperiments%2F3%3Ftab%3Dtrials"]);
});
