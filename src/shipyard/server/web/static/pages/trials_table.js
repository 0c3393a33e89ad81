// @ts-check
// The trials of an experiment as a table: hyperparameters as columns, state, best metric,
// restarts, rung and why each ended; rows can be selected (2 to 5) for the compare view.

import { h, stateBadge } from "../dom.js";
import * as fmt from "../format.js";
import { DataTable } from "../table.js";

export const MAX_COMPARE = 5;

// The hyperparameter names of the trials, in the order the config gives them.
export function hparamNames(exp) {
  const names = new Set(Object.keys(exp.config?.hyperparameters || {}));
  for (const trial of exp.trials) for (const name of Object.keys(trial.hparams || {})) names.add(name);
  return [...names];
}

// Those whose value is not the same in every trial.
export function varyingHparams(exp) {
  return hparamNames(exp).filter((name) => new Set(exp.trials.map((t) => JSON.stringify(t.hparams?.[name]))).size > 1);
}

function sortValue(value) {
  return typeof value === "number" || typeof value === "string" ? value : value === undefined ? null : JSON.stringify(value);
}

function columns(exp) {
  const better = exp.smaller_is_better ? "smaller is better" : "larger is better";
  return [
    { key: "id", title: "Trial", numeric: true, render: (t) => [
      t.id === exp.best_trial_id ? h("span", { title: "best trial", "aria-label": "best trial" }, "★ ") : null,
      h("a", { href: `/trials/${t.id}` }, String(t.id)),
    ] },
    { key: "state", title: "State", render: (t) => stateBadge(t.state) },
    ...hparamNames(exp).map((name) => ({
      key: `hp:${name}`,
      title: name,
      headerTitle: `hyperparameter ${name}`,
      numeric: true,
      value: (t) => sortValue(t.hparams?.[name]),
      render: (t) => fmt.hparam(t.hparams?.[name]),
    })),
    { key: "best_validation", title: `Best ${exp.metric}`, headerTitle: better, numeric: true, render: (t) => fmt.metric(t.best_validation) },
    { key: "latest_validation", title: "Latest", numeric: true, render: (t) => fmt.metric(t.latest_validation) },
    { key: "steps_completed", title: "Steps", numeric: true, render: (t) => fmt.integer(t.steps_completed) },
    { key: "restarts", title: "Restarts", numeric: true },
    { key: "rung", title: "Rung", numeric: true, render: (t) => (t.rung === null || t.rung === undefined ? "—" : String(t.rung)) },
    {
      key: "duration",
      title: "Duration",
      numeric: true,
      value: (t) => fmt.durationSeconds(t.started_at, t.ended_at),
      render: (t) => fmt.duration(t.started_at, t.ended_at),
    },
    {
      key: "end_reason",
      title: "Why it stopped / waits",
      wrap: true,
      render: (t) => h("span", { class: "reason" }, t.end_reason || "—"),
    },
  ];
}

// selection: the trial ids selected, as strings; onHover(trialId | null).
/**
 * @param {any} exp the experiment, with its trials
 * @param {{sort?: string | null, onSort?: (sort: string) => void,
 *          selection?: {selected: Set<string>, onChange?: () => void}, onHover?: (trialId: number | null) => void}} options
 */
export function trialsTable(exp, { sort, onSort, selection, onHover }) {
  const table = new DataTable({
    caption: `Trials of experiment ${exp.id}`,
    columns: columns(exp),
    sort: sort || (exp.smaller_is_better ? "best_validation" : "-best_validation"),
    onSort,
    rowKey: (t) => t.id,
    rowLink: true,
    selection: selection && {
      ...selection,
      max: MAX_COMPARE,
      label: (t) => `Select trial ${t.id} to compare`,
    },
    onHover: onHover && ((key) => onHover(key === null ? null : Number(key))),
    empty: () => "No trials yet: the searcher creates them once the experiment is scheduled.",
  });
  table.setRows(exp.trials);
  return {
    element: table.element,
    update(next) {
      table.setColumns(columns(next), next.trials); // the best trial or the hyperparameters may change
    },
    highlight: (trialId) => table.highlight(trialId),
    refresh: () => table.renderBody(),
  };
}
