// @ts-check
// Arithmetic on a chart's series, no drawing: smoothing, finding a step, the points a log
// scale can show. Pure (web/test/series.test.js tests it under node).

/** @typedef {{xs: number[], ys: (number | null)[]}} Series */

// Exponential moving average, as TensorBoard smooths (0: none, 0.99: very smooth),
// debiased so the first points are not pulled towards zero.
/**
 * @template {number | null} T
 * @param {T[]} ys
 * @param {number} weight
 * @returns {T[]}
 */
export function smooth(ys, weight) {
  if (!weight) return ys;
  let last = 0;
  let debias = 0;
  return ys.map((y) => {
    if (y === null || !isFinite(y)) return y;
    last = last * weight + (1 - weight) * y;
    debias = debias * weight + (1 - weight);
    return /** @type {T} */ (last / debias);
  });
}

// The index of the first value not below `value` in an ascending array (its length if none).
/**
 * @param {number[]} sorted
 * @param {number} value
 */
export function lowerBound(sorted, value) {
  let lo = 0;
  let hi = sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (sorted[mid] < value) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

// The series without its points at or below zero (a log scale cannot place them).
/**
 * @template {Series} S
 * @param {S} s
 * @returns {S}
 */
export function positiveOnly(s) {
  /** @type {number[]} */
  const xs = [];
  /** @type {number[]} */
  const ys = [];
  s.xs.forEach((x, i) => {
    const y = s.ys[i];
    if (y !== null && y > 0) {
      xs.push(x);
      ys.push(y);
    }
  });
  return { ...s, xs, ys };
}
