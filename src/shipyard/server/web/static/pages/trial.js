// @ts-check
// The trial page (/trials/{id}): its header (state, hyperparameters, why it ended) and
// tabs: metrics, logs, checkpoints, runs, environment (query tab). Live while it runs.

import { api, isAbort } from "../api.js";
import { h, replace, stateBadge, facts, loading, tabBar, tabPanel } from "../dom.js";
import * as fmt from "../format.js";
import { query, updateQuery } from "../router.js";
import { createMetricsTab } from "./trial_metrics.js";
import { createLogsTab } from "./trial_logs.js";
import { createCheckpointsTab, createRunsTab, createEnvironmentTab } from "./trial_records.js";
import { pollItem } from "./item_poller.js";
import { createArtifactsTab } from "./trial_artifacts.js";

const TABS = [
  { id: "metrics", title: "Metrics", create: createMetricsTab },
  { id: "logs", title: "Logs", create: createLogsTab },
  { id: "checkpoints", title: "Checkpoints", create: createCheckpointsTab },
  { id: "artifacts", title: "Artifacts", create: createArtifactsTab },
  { id: "runs", title: "Runs", create: createRunsTab },
  { id: "environment", title: "Environment", create: createEnvironmentTab },
];

const TERMINAL = new Set(["COMPLETED", "STOPPED", "ERRORED", "CANCELED"]);

function header(trial, exp) {
  const hparams = Object.entries(trial.hparams || {});
  return h(
    "div",
    null,
    h("div", { class: "breadcrumbs" },
      h("a", { href: "/" }, "Experiments"), " / ",
      h("a", { href: `/experiments/${trial.experiment_id}` }, exp ? `${exp.name} (${exp.id})` : `experiment ${trial.experiment_id}`),
      ` / trial ${trial.id}`),
    h("div", { class: "page-header" }, h("h1", null, `Trial ${trial.id}`), stateBadge(trial.state),
      trial.restarts ? h("span", { class: "badge tone-warn" }, `${trial.restarts} restart${trial.restarts === 1 ? "" : "s"}`) : null),
    trial.end_reason ? h("p", { class: trial.state === "ERRORED" ? "bad" : "description" }, trial.end_reason) : null,
    facts([
      [`Best ${trial.searcher_metric || "metric"}`, fmt.metric(trial.best_validation)],
      ["Latest", fmt.metric(trial.latest_validation)],
      ["Steps completed", fmt.integer(trial.steps_completed)],
      ["Searcher lets it train to", trial.target_length === null || trial.target_length === undefined ? null : fmt.integer(trial.target_length)],
      ["Rung", trial.rung === null || trial.rung === undefined ? null : String(trial.rung)],
      ["Run", String(trial.run_id)],
      ["Slots", (trial.slots || []).join(", ") || null],
      ["Started", fmt.time(trial.started_at)],
      ["Duration", trial.started_at ? fmt.duration(trial.started_at, trial.ended_at) : null],
      ["Seed", String(trial.seed)],
      ["Workspace", trial.workspace],
      ["Parent trial", trial.parent_trial_id ? h("a", { href: `/trials/${trial.parent_trial_id}` }, String(trial.parent_trial_id)) : null],
    ]),
    h("section", { class: "card compact", "aria-label": "Hyperparameters" },
      h("h3", null, "Hyperparameters"),
      hparams.length
        ? facts(hparams.map(([name, value]) => [name, h("span", { class: "mono" }, fmt.hparam(value))]))
        : h("p", { class: "muted" }, "This trial has no hyperparameters.")),
  );
}

export function mount(root, { id }) {
  document.title = `Trial ${id} · Shipyard`;
  const headerBox = h("div", null, loading(`trial ${id}`));
  const tabsBox = h("div");
  let tab = null;
  const page = { trial: null, experiment: null };
  replace(root, headerBox, tabsBox);

  function showTabs() {
    tab?.destroy?.();
    let active = query().get("tab") || "metrics";
    if (!TABS.some((t) => t.id === active)) active = "metrics";
    const panel = tabPanel(active);
    replace(tabsBox, tabBar(TABS, active, selectTab, "Trial views"), panel);
    const { create } = /** @type {(typeof TABS)[number]} */ (TABS.find((t) => t.id === active));
    tab = create(panel, page);
  }

  function selectTab(tabId) {
    updateQuery({ tab: tabId === "metrics" ? null : tabId, rank: null, q: null, level: null }, { push: true });
    showTabs();
    document.getElementById(`tab-${tabId}`)?.focus();
  }

  async function read(signal) {
    const trial = await api.trial(id, signal);
    if (!page.experiment) {
      // The header does without it; the tabs must not start once the page is left.
      page.experiment = await api.experimentSummary(trial.experiment_id, signal).catch((error) => {
        if (isAbort(error)) throw error;
        return null;
      });
    }
    return trial;
  }

  async function show(trial, signal) {
    const first = !page.trial;
    page.trial = trial;
    replace(headerBox, header(trial, page.experiment));
    if (first) showTabs();
    else await tab?.update?.(trial, signal);
  }

  const poller = pollItem({ read, show, ended: (trial) => TERMINAL.has(trial.state), headerBox, min: 2000 });
  return () => {
    poller.stop();
    tab?.destroy?.();
  };
}
