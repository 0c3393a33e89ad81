// How tables sort (static/sorting.js).
import assert from "node:assert/strict";
import { test } from "node:test";

import { compareValues, parseSort, rowOrder } from "../../src/shipyard/server/web/static/sorting.js";

test("numbers sort as numbers, text in natural order", () => {
  assert.deepEqual([10, 9, 100].sort(compareValues), [9, 10, 100]);
  assert.deepEqual(["trial 10", "trial 2", "Trial 1"].sort(compareValues), ["Trial 1", "trial 2", "trial 10"]);
});

test("missing values sort last, up or down", () => {
  const rows = [{ v: 2 }, { v: null }, { v: 1 }, {}, { v: 3 }];
  const up = rows.slice().sort(rowOrder((r) => r.v, false)).map((r) => r.v);
  const down = rows.slice().sort(rowOrder((r) => r.v, true)).map((r) => r.v);
  assert.deepEqual(up.slice(0, 3), [1, 2, 3]);
  assert.deepEqual(down.slice(0, 3), [3, 2, 1]);
  for (const order of [up, down]) assert.ok(order.slice(3).every((v) => v === null || v === undefined));
  assert.equal(compareValues(NaN, 1), 1);
});

test("a sort is a key, '-key' for descending", () => {
  assert.deepEqual(parseSort("-best_validation"), { key: "best_validation", desc: true });
  assert.deepEqual(parseSort("id"), { key: "id", desc: false });
  assert.deepEqual(parseSort(null, "-id"), { key: "id", desc: true });
  assert.deepEqual(parseSort(""), { key: "", desc: false });
});
