// The model registry's page (static/pages/models.js): its paths, and the links and text a
// version's lineage makes.
import assert from "node:assert/strict";
import { test } from "node:test";

import { commitUrl, metricsText, modelHref, modelName } from "../../src/shipyard/server/web/static/pages/models.js";

test("a model's path names it; the list's names none", () => {
  assert.equal(modelName("/models"), null);
  assert.equal(modelName("/models/"), null);
  assert.equal(modelName("/models/digits"), "digits");
  assert.equal(modelName("/models/res.net-2/"), "res.net-2");
  assert.equal(modelName("/models/a/b"), null);
  assert.equal(modelHref({ name: "digits", workspace: "team b" }), "/models/digits?workspace=team%20b");
});

test("a commit links to its remote's page only for an https remote", () => {
  const commit = "0123456789abcdef0123456789abcdef01234567";
  assert.equal(commitUrl({ commit, remote: "https://github.com/ml/x.git" }), `https://github.com/ml/x/commit/${commit}`);
  assert.equal(commitUrl({ commit, remote: "git@github.com:ml/x.git" }), null);
  assert.equal(commitUrl({ commit, remote: "javascript:alert(1)" }), null);
  assert.equal(commitUrl({ commit }), null);
  assert.equal(commitUrl(null), null);
});

test("validation metrics read as name value pairs", () => {
  assert.equal(metricsText({}), "—");
  assert.equal(metricsText({ val_loss: 0.25, accuracy: null }).startsWith("val_loss 0.25, accuracy "), true);
});
