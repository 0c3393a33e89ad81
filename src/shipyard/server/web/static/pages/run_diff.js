// @ts-check
// What compared trials ran differently (GET /trials/{a}/diff/{b}): their code,
// hyperparameters, config, packages, framework build, GPU, CPU, Python, OS, image and
// environment variables, as the master diffs them (rank 0's capture of each trial's latest
// run). Two trials: one diff; three to five: each against the first, one request each.

import { api } from "../api.js";
import { h, simpleTable } from "../dom.js";

export const VALUE_WIDTH = 60; // a value longer than this is cut; its title has it whole

/** @typedef {{category: string, item: string, change: string, a: unknown, b: unknown}} Difference */
/** @typedef {{a: number, b: number, rank: number, identical: boolean, differences: Difference[], missing: string[]}} TrialDiff */
/** @typedef {Difference & {trial: number}} DiffRow a difference, and the trial compared with the first */

/** @type {Record<string, string>} */
const CATEGORY_TITLES = {
  code: "Code",
  hyperparameters: "Hyperparameters",
  config: "Config",
  packages: "Packages",
  framework: "Framework build",
  gpu: "GPU",
  cpu: "CPU",
  python: "Python",
  os: "OS",
  image: "Image",
  env: "Environment variables",
};

/** @param {string} category */
export function categoryTitle(category) {
  return CATEGORY_TITLES[category] || category;
}

// A value of a difference as text, exactly (no rounding: 0.0100001 is not 0.01).
/** @param {unknown} value */
export function diffValue(value) {
  if (value === null || value === undefined) return "—";
  if (typeof value === "string") return value;
  if (typeof value === "object") return JSON.stringify(value);
  return String(value);
}

// A long text cut to `width` characters with an ellipsis; `full` is the whole text when cut.
/**
 * @param {string} text
 * @param {number} [width]
 * @returns {{text: string, full: string | null}}
 */
export function cut(text, width = VALUE_WIDTH) {
  const chars = [...text]; // not in the middle of a surrogate pair
  return chars.length <= width ? { text, full: null } : { text: chars.slice(0, width - 1).join("") + "…", full: text };
}

// The rows of the table: every difference of every diff, with the trial it compares the
// first one with, in the master's order (by category).
/**
 * @param {TrialDiff[]} diffs
 * @returns {DiffRow[]}
 */
export function diffRows(diffs) {
  return diffs.flatMap((d) => d.differences.map((x) => ({ trial: d.b, ...x })));
}

// What could not be compared, each said once (the first trial's missing capture is in
// every diff).
/** @param {TrialDiff[]} diffs */
export function missingNotes(diffs) {
  return [...new Set(diffs.flatMap((d) => d.missing || []))];
}

/** @param {unknown} value */
function valueCell(value) {
  const { text, full } = cut(diffValue(value));
  return h("span", { class: value === null || value === undefined ? "muted" : "mono", title: full }, text);
}

// The whole part of the compare view, for trials `ids` (the first is the reference);
// complete: nothing was left uncompared (a capture that is missing may still come).
/**
 * @param {number[]} ids
 * @param {AbortSignal} [signal]
 */
export async function runDiff(ids, signal) {
  const [first, ...others] = ids;
  /** @type {TrialDiff[]} */
  const diffs = await Promise.all(others.map((id) => api.trialDiff(first, id, {}, signal)));
  const rows = diffRows(diffs);
  const missing = missingNotes(diffs);
  const pair = ids.length === 2;
  const same = diffs.filter((d) => !d.differences.length).map((d) => d.b);
  const title = h("h3", null, "What they ran differently");
  const intro = pair
    ? h("p", { class: "muted" }, `Trial ${first} against trial ${others[0]}: their code, hyperparameters, config and each one's environment (rank 0 of its latest run). Host names, times and GPU UUIDs are left out.`)
    : h("p", { class: "muted" }, `Each trial against trial ${first}, the first: their code, hyperparameters, config and environment (rank 0 of each one's latest run). Host names, times and GPU UUIDs are left out.`);
  /** @type {(HTMLElement | null)[]} */
  const parts = [title, intro];
  if (!rows.length) {
    parts.push(h("p", { class: "diff-verdict" }, missing.length
      ? "No difference in what could be compared."
      : pair ? "They ran the same code, config and environment." : `They all ran the same code, config and environment as trial ${first}.`));
  } else {
    if (!pair && same.length) parts.push(h("p", null, `The same code, config and environment as trial ${first}: trial${same.length > 1 ? "s" : ""} ${same.join(", ")}.`));
    const headers = pair
      ? ["Category", "Item", "Change", `Trial ${first}`, `Trial ${others[0]}`]
      : ["Trial", "Category", "Item", "Change", `Trial ${first}`, "That trial"];
    const caption = pair ? `What trials ${first} and ${others[0]} ran differently` : `What trials ${others.join(", ")} ran differently from trial ${first}`;
    parts.push(simpleTable(caption, headers, rows.map((r) => {
      const cells = [categoryTitle(r.category), h("span", { class: "mono" }, r.item), h("span", { class: `change change-${r.change}` }, r.change), valueCell(r.a), valueCell(r.b)];
      return pair ? cells : [h("a", { href: `/trials/${r.trial}` }, String(r.trial)), ...cells];
    })));
    parts.push(h("p", { class: "muted" }, `${rows.length} difference${rows.length === 1 ? "" : "s"}.`));
  }
  if (missing.length) {
    parts.push(h("div", { class: "notice", role: "note" }, h("strong", null, "Not compared: "),
      h("ul", { class: "plain-list" }, missing.map((m) => h("li", null, m)))));
  }
  return { element: h("div", { dataset: { diff: pair ? "pair" : "first" }, class: "run-diff" }, parts), complete: !missing.length };
}
