// A hyperparameter as an axis (static/hparam_axis.js).
import assert from "node:assert/strict";
import { test } from "node:test";

import { HparamAxis } from "../../src/shipyard/server/web/static/hparam_axis.js";

test("numbers lie on a linear axis", () => {
  const axis = new HparamAxis("layers", [2, 4, null, 6], { type: "int" });
  assert.ok(axis.numeric && !axis.log);
  assert.equal(axis.position(2), 0);
  assert.equal(axis.position(4), 0.5);
  assert.equal(axis.position(null), null);
  assert.deepEqual(axis.ticks(3).map((t) => t.label), ["2", "4", "6"]);
  assert.equal(axis.binOf(6, 4), 3);
  assert.equal(axis.binOf(2, 4), 0);
});

test("a log hyperparameter gets a log axis", () => {
  const axis = new HparamAxis("lr", [0.001, 0.01, 0.1], { type: "log" });
  assert.ok(axis.log);
  assert.ok(Math.abs(axis.position(0.01) - 0.5) < 1e-12);
  assert.deepEqual(axis.bins(2).map((b) => b.label), ["0.001–0.01", "0.01–0.1"]);
});

test("one value: the axis is widened around it", () => {
  const axis = new HparamAxis("x", [5, 5], null);
  assert.equal(axis.position(5), 0.5);
});

test("anything else is categories in natural order", () => {
  const axis = new HparamAxis("opt", ["sgd", "adam", "sgd", "adamw"], { type: "categorical" });
  assert.ok(!axis.numeric);
  assert.deepEqual(axis.categories, ["adam", "adamw", "sgd"]);
  assert.equal(axis.position("adamw"), 0.5);
  assert.equal(axis.position("rmsprop"), null);
  assert.equal(axis.binOf("sgd", 3), 2);
  assert.deepEqual(new HparamAxis("one", ["a"], null).ticks(), [{ at: 0.5, label: "a" }]);
});
