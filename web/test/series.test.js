// Arithmetic on a chart's series (static/series.js).
import assert from "node:assert/strict";
import { test } from "node:test";

import { lowerBound, positiveOnly, smooth } from "../../src/shipyard/server/web/static/series.js";

test("smoothing 0 leaves the values as they are", () => {
  const ys = [1, 5, 2];
  assert.equal(smooth(ys, 0), ys);
});

test("smoothing is TensorBoard's debiased moving average", () => {
  const out = smooth([1, 2, 3], 0.5);
  assert.equal(out[0], 1); // debiased: the first point is not pulled towards zero
  assert.ok(Math.abs(out[1] - (0.5 * 0.5 * 1 + 0.5 * 2) / 0.75) < 1e-12);
  assert.ok(out[2] > out[1] && out[2] < 3);
});

test("smoothing passes missing and infinite values through and skips them", () => {
  const out = smooth([2, null, Infinity, 2], 0.9);
  assert.equal(out[1], null);
  assert.equal(out[2], Infinity);
  assert.ok(Math.abs(out[3] - 2) < 1e-12);
});

test("lowerBound finds the first step not below a value", () => {
  const steps = [10, 20, 20, 40];
  assert.equal(lowerBound(steps, 5), 0);
  assert.equal(lowerBound(steps, 20), 1);
  assert.equal(lowerBound(steps, 30), 3);
  assert.equal(lowerBound(steps, 50), 4);
  assert.equal(lowerBound([], 1), 0);
});

test("a log scale keeps the positive points only", () => {
  const line = { key: 7, xs: [1, 2, 3, 4], ys: [0.5, 0, -1, null] };
  assert.deepEqual(positiveOnly(line), { key: 7, xs: [1], ys: [0.5] });
});
