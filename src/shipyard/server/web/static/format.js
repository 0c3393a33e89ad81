// How numbers, times and sizes read on the pages.

export function metric(value) {
  if (value === null || value === undefined) return "—";
  if (typeof value !== "number") return String(value);
  if (value === 0) return "0";
  const abs = Math.abs(value);
  if (abs >= 1e5 || abs < 1e-3) return value.toExponential(3);
  return Number(value.toPrecision(5)).toString();
}

// A number in few digits, for axis labels and bin edges.
export function short(value) {
  if (typeof value !== "number") return hparam(value);
  if (value === 0) return "0";
  const abs = Math.abs(value);
  if (abs >= 1e5 || abs < 1e-3) return value.toExponential(1);
  return Number(value.toPrecision(3)).toString();
}

export function hparam(value) {
  if (value === null || value === undefined) return "—";
  if (typeof value === "number") return metric(value);
  if (typeof value === "object") return JSON.stringify(value);
  return String(value);
}

export function integer(value) {
  return value === null || value === undefined ? "—" : Number(value).toLocaleString("en-US");
}

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
export function parseTime(iso) {
  if (!iso) return null;
  return Date.parse(/[zZ]|[+-]\d\d:?\d\d$/.test(iso) ? iso : iso + "Z");
}

// Seconds from start to end (or to now while it runs).
export function durationSeconds(start, end) {
  if (!start) return null;
  const to = end ? parseTime(end) : Date.now();
  return (to - parseTime(start)) / 1000;
}

export function duration(start, end) {
  return seconds(durationSeconds(start, end));
}

export function time(iso) {
  if (!iso) return "—";
  const date = new Date(parseTime(iso));
  return date.toLocaleString("en-GB", {
    year: "numeric",
    month: "short",
    day: "2-digit",
    hour: "2-digit",
    minute: "2-digit",
    second: "2-digit",
  });
}

export function percent(fraction) {
  return `${Math.round(Math.max(0, Math.min(1, fraction || 0)) * 100)}%`;
}

// Metric series in reading order: the searcher's metric first, validation before training.
export function metricOrder(searcherMetric) {
  const rank = (name, group) => (name === searcherMetric ? 0 : group === "validation" ? 1 : 2);
  return (a, b) => rank(a.name, a.group) - rank(b.name, b.group) || a.name.localeCompare(b.name) || a.group.localeCompare(b.group);
}
