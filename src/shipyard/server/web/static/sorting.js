// @ts-check
// How tables sort: numbers as numbers, text in natural order ("trial 2" before "trial 10"),
// missing values last. Pure (web/test/sorting.test.js tests it under node).

/** @param {unknown} value */
function isMissing(value) {
  return value === null || value === undefined || (typeof value === "number" && isNaN(value));
}

// Sort values: numbers and strings; null and undefined always sort last.
/**
 * @param {unknown} a
 * @param {unknown} b
 */
export function compareValues(a, b) {
  const aMissing = isMissing(a);
  const bMissing = isMissing(b);
  if (aMissing || bMissing) return aMissing === bMissing ? 0 : aMissing ? 1 : -1;
  if (typeof a === "number" && typeof b === "number") return a - b;
  return String(a).localeCompare(String(b), "en", { numeric: true });
}

/** @typedef {{key: string, desc: boolean}} Sort */

// "name" sorts up by name, "-name" down; text empty: the fallback.
/**
 * @param {string | null | undefined} text
 * @param {string | null} [fallback]
 * @returns {Sort}
 */
export function parseSort(text, fallback) {
  const value = text || fallback || "";
  return value.startsWith("-") ? { key: value.slice(1), desc: true } : { key: value, desc: false };
}

// Rows ordered by a column's value, up or down; rows without a value last either way.
/**
 * @template Row
 * @param {(row: Row) => unknown} value
 * @param {boolean} desc
 * @returns {(a: Row, b: Row) => number}
 */
export function rowOrder(value, desc) {
  const sign = desc ? -1 : 1;
  return (a, b) => {
    const va = value(a);
    const vb = value(b);
    const missing = va === null || va === undefined || vb === null || vb === undefined;
    return missing ? compareValues(va, vb) : sign * compareValues(va, vb);
  };
}
