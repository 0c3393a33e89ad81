// @ts-check
// The experiment page (/experiments/{id}): its header (state, actions, searcher progress)
// and tabs: curves, hyperparameters, rungs (ASHA, Hyperband), trials, config; with
// ?compare=3,5 the compare view of those trials. Live while the experiment runs.

import { api } from "../api.js";
import { experimentActions, isTerminal } from "../actions.js";
import { h, replace, stateBadge, progressBar, facts, errorBox, loading, tabBar, tabPanel, copyButton } from "../dom.js";
import * as fmt from "../format.js";
import { query, updateQuery } from "../router.js";
import { toYaml } from "../yaml.js";
import { createCurvesTab } from "./experiment_curves.js";
import { createHparamsTab } from "./experiment_hparams.js";
import { createRungsTab, hasRungs } from "./experiment_rungs.js";
import { createCompareView } from "./compare.js";
import { trialsTable, MAX_COMPARE } from "./trials_table.js";
import { pollItem } from "./item_poller.js";

/** @returns {{id: string, title: string}[]} */
function tabsFor(exp) {
  const tabs = [
    { id: "curves", title: "Learning curves" },
    { id: "hparams", title: "Hyperparameters" },
    hasRungs(exp) ? { id: "rungs", title: "Rungs" } : null,
    { id: "trials", title: `Trials (${exp.num_trials})` },
    { id: "config", title: "Config" },
  ];
  return tabs.filter((tab) => tab !== null);
}

function header(exp, onAction, onError) {
  const states = Object.entries(exp.trial_states || {}).map(([state, count]) => `${count} ${state.toLowerCase()}`).join(", ");
  const searcherInfo = exp.searcher_summary?.brackets
    ? `${exp.searcher} · ${exp.searcher_summary.brackets.length} bracket(s)`
    : exp.searcher;
  return h(
    "div",
    null,
    h("div", { class: "breadcrumbs" }, h("a", { href: "/" }, "Experiments"), ` / ${exp.id}`),
    h("div", { class: "page-header" },
      h("h1", null, exp.name),
      stateBadge(exp.state),
      exp.archived ? h("span", { class: "chip" }, "archived") : null,
      (exp.labels || []).map((label) => h("a", { class: "chip", href: `/?label=${encodeURIComponent(label)}` }, label)),
      h("span", { class: "spacer" }),
      experimentActions(exp, { onDone: onAction, onError }),
    ),
    exp.description ? h("p", { class: "description" }, exp.description) : null,
    facts([
      ["Searcher", searcherInfo],
      ["Progress", h("span", null, progressBar(exp.progress, "searcher progress"), " ", fmt.percent(exp.progress))],
      ["Metric", `${exp.metric} (${exp.smaller_is_better ? "smaller" : "larger"} is better)`],
      ["Best", exp.best_trial_id ? h("span", null, fmt.metric(exp.best_validation), " · ", h("a", { href: `/trials/${exp.best_trial_id}` }, `trial ${exp.best_trial_id}`)) : "—"],
      ["Trials", states ? `${exp.num_trials}: ${states}` : "none yet"],
      ["Workspace", exp.workspace],
      ["Created", fmt.time(exp.created_at)],
      ["Duration", fmt.duration(exp.created_at, exp.ended_at)],
    ]),
  );
}

function createConfigTab(panel, page) {
  const yaml = toYaml(page.experiment.config);
  replace(
    panel,
    h("div", { class: "toolbar" }, h("h2", { style: { margin: 0 } }, "Experiment config"), copyButton(yaml, "Copy YAML")),
    h("p", { class: "muted" }, "The config as the master stored it, defaults filled in; submit it again with ", h("code", null, "shipyard experiment create config.yaml ."), "."),
    h("pre", { class: "code-block", tabindex: "0", "aria-label": "Experiment config (YAML)" }, yaml),
  );
  return {};
}

function createTrialsTab(panel, page) {
  const table = trialsTable(page.experiment, {
    sort: query().get("sort"),
    onSort: (sort) => updateQuery({ sort }),
    selection: page.selection,
  });
  replace(panel, page.compareBar(), table.element);
  return { update: (next) => table.update(next), selectionChanged: () => table.refresh() };
}

const TABS = { curves: createCurvesTab, hparams: createHparamsTab, rungs: createRungsTab, trials: createTrialsTab, config: createConfigTab };

export function mount(root, { id }) {
  document.title = `Experiment ${id} · Shipyard`;
  const headerBox = h("div", null, loading(`experiment ${id}`));
  const message = h("div");
  const tabsBox = h("div");
  let panel = null;
  let tab = null;
  let compare = null;
  let headerText = null;
  const page = {
    experiment: null,
    selection: {
      selected: new Set((query().get("compare") || "").split(",").filter(Boolean)),
      onChange: () => selectionChanged(),
    },
    compareBar,
  };
  const compareBars = [];
  replace(root, headerBox, message, tabsBox);

  function compareBar() {
    const bar = h("div", { class: "toolbar compare-bar" });
    compareBars.push(bar);
    fillCompareBar(bar);
    return bar;
  }

  function fillCompareBar(bar) {
    const count = page.selection.selected.size;
    replace(
      bar,
      h("button", { type: "button", class: "button primary", disabled: count < 2, onclick: openCompare, dataset: { action: "compare" } },
        count >= 2 ? `Compare ${count} trials` : "Compare trials"),
      h("span", { class: "muted" }, count ? `${count} selected (2 to ${MAX_COMPARE})` : `Select 2 to ${MAX_COMPARE} trials to compare them`),
      count ? h("button", { type: "button", class: "button small", onclick: clearSelection }, "Clear selection") : null,
    );
  }

  function selectionChanged() {
    compareBars.forEach(fillCompareBar);
  }

  function clearSelection() {
    page.selection.selected.clear();
    selectionChanged();
    tab?.selectionChanged?.();
  }

  function openCompare() {
    updateQuery({ compare: [...page.selection.selected].join(",") }, { push: true });
    showBody();
  }

  function closeCompare() {
    updateQuery({ compare: null }, { push: true });
    showBody();
  }

  function showBody() {
    const ids = (query().get("compare") || "").split(",").filter(Boolean).map(Number);
    tab?.destroy?.();
    compare?.destroy?.();
    tab = compare = null;
    compareBars.length = 0;
    if (ids.length >= 2) {
      replace(tabsBox);
      panel = h("section", { class: "tab-panel", "aria-label": "Compare trials" });
      tabsBox.append(panel);
      compare = createCompareView(panel, page.experiment, ids.slice(0, MAX_COMPARE), closeCompare);
      return;
    }
    const tabs = tabsFor(page.experiment);
    let active = query().get("tab") || "curves";
    if (!tabs.some((t) => t.id === active)) active = "curves";
    panel = tabPanel(active);
    replace(tabsBox, tabBar(tabs, active, selectTab, "Experiment views"), panel);
    tab = TABS[active](panel, page);
  }

  function selectTab(id) {
    updateQuery({ tab: id === "curves" ? null : id }, { push: true });
    showBody();
    document.getElementById(`tab-${id}`)?.focus();
  }

  function showHeader(exp) {
    const { trials, config, searcher_summary, ...summary } = exp;
    const text = JSON.stringify([summary, searcher_summary]);
    if (text === headerText) return;
    headerText = text;
    replace(headerBox, header(exp, () => poller.kick(), (error) => replace(message, errorBox(error))));
  }

  async function show(exp, signal) {
    const first = !page.experiment;
    page.experiment = exp;
    showHeader(exp);
    if (first) showBody();
    else await (tab || compare)?.update?.(exp, signal);
  }

  const poller = pollItem({
    read: (signal) => api.experiment(id, signal),
    show,
    ended: (exp) => isTerminal(exp.state), // then only the user's actions change it (kick)
    headerBox,
    min: 1500,
  });
  return () => {
    poller.stop();
    tab?.destroy?.();
    compare?.destroy?.();
  };
}
