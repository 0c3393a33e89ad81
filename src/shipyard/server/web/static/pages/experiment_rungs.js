// @ts-check
// The rungs of an adaptive search (ASHA, Hyperband, Optuna's ASHA pruner): for each rung,
// the trials that reached it ordered by their metric there, and which were promoted on.

import { api, isAbort } from "../api.js";
import { h, replace, emptyState, errorBox, loading } from "../dom.js";
import * as fmt from "../format.js";

const SHOWN_PER_RUNG = 200;
// Whole validation series (the master's maximum; they are short): a downsampled one keeps
// its minima and maxima, not the value a trial had at a rung's length.
const MAX_POINTS = 100000;

function brackets(exp) {
  const summary = exp.searcher_summary || {};
  if (Array.isArray(summary.brackets)) return summary.brackets.filter((b) => Array.isArray(b.rungs));
  if (Array.isArray(summary.rungs)) return [{ bracket: 0, rungs: summary.rungs }];
  return [];
}

export function hasRungs(exp) {
  return brackets(exp).some((b) => b.rungs.length > 1);
}

// trial id -> [[time, value]] of the searcher metric, the time in the searcher's unit: its
// time_metric when it has one (a point without it is left out), else steps.
async function valuesByTime(exp, signal) {
  const timeMetric = exp.config?.searcher?.time_metric;
  const [values, times] = await Promise.all([
    api.curves(exp.id, { name: exp.metric, group: "validation", max_points: MAX_POINTS }, signal),
    timeMetric ? api.curves(exp.id, { name: timeMetric, group: "validation", max_points: MAX_POINTS }, signal) : null,
  ]);
  const timeAt = times && new Map(times.map((s) => [s.trial_id, new Map(s.steps.map((step, i) => [step, s.values[i]]))]));
  return new Map(values.map((s) => {
    const time = (step) => (timeAt ? timeAt.get(s.trial_id)?.get(step) : step);
    const points = s.steps.map((step, i) => [time(step), s.values[i]]);
    return [s.trial_id, points.filter(([t]) => t !== undefined && t !== null)];
  }));
}

// The metric where the trial stood at a rung: its last value at or before the rung's length.
function valueAt(points, length) {
  let value = null;
  for (const [time, v] of points || []) if (time <= length && v !== null) value = v;
  return value;
}

function status(trial, k) {
  if (trial.rung > k) return ["promoted", "promoted"];
  if (trial.state === "COMPLETED") return ["completed", "completed"];
  if (["STOPPED", "CANCELED", "ERRORED"].includes(trial.state)) return [trial.state === "STOPPED" ? "stopped here" : trial.state.toLowerCase(), "stopped"];
  return ["in progress", "live"];
}

function rungColumn(exp, rung, trials, values, unit) {
  const k = rung.rung;
  const here = trials
    .filter((t) => (t.rung ?? 0) > k || ((t.rung ?? 0) === k && t.steps_completed > 0))
    .map((t) => ({ trial: t, value: valueAt(values.get(t.id), rung.length ?? Infinity) }))
    .sort((a, b) => {
      if (a.value === null || b.value === null) return a.value === null ? 1 : -1;
      return exp.smaller_is_better ? a.value - b.value : b.value - a.value;
    });
  const promoted = here.filter((r) => r.trial.rung > k).length;
  return h(
    "section",
    { class: "rung", "aria-label": `Rung ${k}` },
    h("h3", null, `Rung ${k}`),
    h("div", { class: "muted" }, rung.length !== null && rung.length !== undefined ? `at ${fmt.integer(rung.length)} ${unit}` : "no length"),
    h("div", { class: "muted" }, `${here.length} trials · ${promoted} promoted`),
    h("ol", null, here.slice(0, SHOWN_PER_RUNG).map(({ trial, value }) => {
      const [text, kind] = status(trial, k);
      return h("li", { class: kind === "promoted" ? "promoted" : null, dataset: { trial: trial.id } },
        h("a", { href: `/trials/${trial.id}` }, `Trial ${trial.id}`),
        h("span", { title: `${exp.metric} at ${unit} ≤ ${rung.length}` }, fmt.metric(value)),
        h("span", { class: "muted" }, text));
    })),
    here.length > SHOWN_PER_RUNG ? h("p", { class: "muted" }, `and ${here.length - SHOWN_PER_RUNG} more`) : null,
  );
}

// What the rungs show of the trials: a change loads the series again.
function rungsKey(exp) {
  return exp.trials.map((t) => `${t.id}:${t.rung}:${t.state}:${t.steps_completed}`).join(",");
}

export function createRungsTab(panel, page) {
  let exp = page.experiment;
  let shown = null;

  async function render(signal) {
    shown = rungsKey(exp);
    if (!hasRungs(exp)) {
      replace(panel, emptyState("This search has no rungs", `The ${exp.searcher} searcher trains every trial to the end; ASHA, Hyperband and Optuna's ASHA pruner stop the worst early, and this view shows where.`));
      return;
    }
    if (!panel.querySelector(".rungs")) replace(panel, loading("rungs"));
    const values = await valuesByTime(exp, signal);
    const unit = exp.config?.searcher?.time_metric || "steps";
    const all = brackets(exp);
    const bracketViews = all.map((bracket) => {
      const trials = exp.trials.filter((t) => (t.searcher_info?.bracket ?? 0) === (bracket.bracket ?? 0));
      return h("div", { class: "card" },
        all.length > 1 ? h("h2", null, `Bracket ${bracket.bracket}`) : null,
        h("div", { class: "rungs" }, bracket.rungs.map((rung) => rungColumn(exp, rung, trials, values, unit))));
    });
    replace(
      panel,
      h("p", { class: "muted" }, `Each column is a rung: the trials that reached it, best ${exp.metric} first. `,
        "Green ones were promoted to the next rung; the others were stopped there (or are still on their way)."),
      bracketViews,
    );
  }

  const controller = new AbortController(); // aborted when the tab is left
  render(controller.signal).catch((error) => {
    if (!isAbort(error)) replace(panel, errorBox(error));
  });
  return {
    async update(next, signal) {
      exp = next;
      if (rungsKey(next) !== shown) await render(signal);
    },
    destroy: () => controller.abort(),
  };
}
