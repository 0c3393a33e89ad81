// Trials ranked on the searcher metric (static/pages/ranking.js).
import assert from "node:assert/strict";
import { test } from "node:test";

import { bestLast, ranks } from "../../src/shipyard/server/web/static/pages/ranking.js";

const trials = [
  { id: 1, best_validation: 0.3 },
  { id: 2, best_validation: 0.1 },
  { id: 3, best_validation: null },
  { id: 4, best_validation: 0.2 },
];

test("the best trial is rank 0; trials without the metric are not ranked", () => {
  assert.deepEqual([...ranks({ smaller_is_better: true, trials })], [[2, 0], [4, 1], [1, 2]]);
  assert.deepEqual([...ranks({ smaller_is_better: false, trials })], [[1, 0], [4, 1], [2, 2]]);
});

test("the best trials are drawn last (on top), unranked ones first", () => {
  const rank = ranks({ smaller_is_better: true, trials });
  assert.deepEqual([2, 3, 1, 4].sort(bestLast(rank)), [3, 1, 4, 2]);
});
