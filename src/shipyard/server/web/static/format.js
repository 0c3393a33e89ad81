// @ts-check
// How numbers, times and sizes read on the pages.

/** @param {unknown} value */
export function metric(value) {
  if (value === null || value === undefined) return "—";
  if (typeof value !== "number") return String(value);
  if (value === 0) return "0";
  const abs = Math.abs(value);
  if (abs >= 1e5 || abs < 1e-3) return value.toExponential(3);
  return Number(value.toPrecision(5)).toString();
}

// A number in few digits, for axis labels and bin edges.
/** @param {unknown} value */
export function short(value) {
  if (typeof value !== "number") return hparam(value);
  if (value === 0) return "0";
  const abs = Math.abs(value);
  if (abs >= 1e5 || abs < 1e-3) return value.toExponential(1);
  return Number(value.toPrecision(3)).toString();
}

/** @param {unknown} value */
export function hparam(value) {
  if (value === null || value === undefined) return "—";
  if (typeof value === "number") return metric(value);
  if (typeof value === "object") return JSON.stringify(value);
  return String(value);
}

/** @param {number | string | null | undefined} value */
export function integer(value) {
  return value === null || value === undefined ? "—" : Number(value).toLocaleString("en-US");
}

/** @param {number | null | undefined} size */
export function bytes(size) {
  if (size === null || size === undefined) return "—";
  const units = ["B", "KB", "MB", "GB", "TB"];
  let value = size;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit += 1;
  }
  return `${unit === 0 ? value : value.toFixed(1)} ${units[unit]}`;
}

/** @param {number | null | undefined} total */
export function seconds(total) {
  if (total === null || total === undefined || !isFinite(total)) return "—";
  const s = Math.max(0, Math.round(total));
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m ${s % 60}s`;
  const h = Math.floor(m / 60);
  if (h < 48) return `${h}h ${m % 60}m`;
  return `${Math.floor(h / 24)}d ${h % 24}h`;
}

// The master's times are UTC; one without a zone (SQLite drops it) is read as UTC too.
/**
 * @param {string | null | undefined} iso
 * @returns {number | null} milliseconds since the epoch (NaN when unreadable)
 */
export function parseTime(iso) {
  if (!iso) return null;
  return Date.parse(/[zZ]|[+-]\d\d:?\d\d$/.test(iso) ? iso : iso + "Z");
}

// Seconds from start to end (or to now while it runs).
/**
 * @param {string | null | undefined} start
 * @param {string | null | undefined} [end]
 */
export function durationSeconds(start, end) {
  if (!start) return null;
  const to = end ? Number(parseTime(end)) : Date.now();
  return (to - Number(parseTime(start))) / 1000;
}

/**
 * @param {string | null | undefined} start
 * @param {string | null | undefined} [end]
 */
export function duration(start, end) {
  return seconds(durationSeconds(start, end));
}

/** @param {string | null | undefined} iso */
export function time(iso) {
  if (!iso) return "—";
  const date = new Date(Number(parseTime(iso)));
  return date.toLocaleString("en-GB", {
    year: "numeric",
    month: "short",
    day: "2-digit",
    hour: "2-digit",
    minute: "2-digit",
    second: "2-digit",
  });
}

/** @param {number | null | undefined} fraction */
export function percent(fraction) {
  return `${Math.round(Math.max(0, Math.min(1, fraction || 0)) * 100)}%`;
}

// Metric series in reading order: the searcher's metric first, validation before training.
/** @typedef {{name: string, group: string}} MetricSeries */
/**
 * @param {string | null | undefined} searcherMetric
 * @returns {(a: MetricSeries, b: MetricSeries) => number}
 */
export function metricOrder(searcherMetric) {
  /** @param {string} name @param {string} group */
  const rank = (name, group) => (name === searcherMetric ? 0 : group === "validation" ? 1 : 2);
  return (a, b) => rank(a.name, a.group) - rank(b.name, b.group) || a.name.localeCompare(b.name) || a.group.localeCompare(b.group);
}
