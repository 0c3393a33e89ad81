// The pure parts of the pages: log levels, the hyperparameters that vary, rungs.
import assert from "node:assert/strict";
import { test } from "node:test";

import { hasRungs } from "../../src/shipyard/server/web/static/pages/experiment_rungs.js";
import { levelOf } from "../../src/shipyard/server/web/static/pages/trial_logs.js";
import { hparamNames, varyingHparams } from "../../src/shipyard/server/web/static/pages/trials_table.js";

test("a log line's level is read from its text", () => {
  assert.equal(levelOf("2024 ERROR something broke"), "error");
  assert.equal(levelOf("Traceback (most recent call last):"), "error");
  assert.equal(levelOf("ValueError: bad value"), "error");
  assert.equal(levelOf("WARNING: slow"), "warning");
  assert.equal(levelOf("[WARN] slow"), "warning");
  assert.equal(levelOf("DEBUG step 3"), "debug");
  assert.equal(levelOf("epoch 1 loss 0.3"), "info");
});

test("hyperparameters in the config's order, then the trials'; those that vary", () => {
  const exp = {
    config: { hyperparameters: { lr: {}, layers: {} } },
    trials: [
      { hparams: { lr: 0.1, layers: 2, extra: "a" } },
      { hparams: { lr: 0.01, layers: 2, extra: "a" } },
    ],
  };
  assert.deepEqual(hparamNames(exp), ["lr", "layers", "extra"]);
  assert.deepEqual(varyingHparams(exp), ["lr"]);
});

test("a search has rungs when a bracket has more than one", () => {
  assert.ok(hasRungs({ searcher_summary: { rungs: [{ rung: 0 }, { rung: 1 }] } }));
  assert.ok(hasRungs({ searcher_summary: { brackets: [{ rungs: [{}] }, { rungs: [{}, {}] }] } }));
  assert.ok(!hasRungs({ searcher_summary: { rungs: [{ rung: 0 }] } }));
  assert.ok(!hasRungs({ searcher_summary: null }));
});
