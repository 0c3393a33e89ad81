// @ts-check
// The compare view of 2 to 5 trials (/experiments/{id}?compare=3,5): every metric they
// reported overlaid, one colour a trial, a table of their hyperparameters, config and
// environment with the rows that differ marked, and what they ran differently (run_diff.js:
// the master's diff of their code, config and captured environments).

import { api, isAbort } from "../api.js";
import { CurvesChart } from "../charts.js";
import { PALETTE } from "../palette.js";
import { h, replace, errorBox, loading, stateBadge, labeled } from "../dom.js";
import * as fmt from "../format.js";
import { hparamNames } from "./trials_table.js";
import { runDiff } from "./run_diff.js";

const POINTS = 400;

function lastEnvironment(trial) {
  const runs = trial.runs || [];
  return runs.length ? runs[runs.length - 1].environment || {} : {};
}

// [section, name, value per trial (text)]
function diffRows(exp, trials) {
  const rows = [];
  for (const name of hparamNames(exp)) rows.push(["Hyperparameters", name, trials.map((t) => fmt.hparam(t.hparams?.[name]))]);
  const facts = [
    ["state", (t) => t.state],
    [`best ${exp.metric}`, (t) => fmt.metric(t.best_validation)],
    [`latest ${exp.metric}`, (t) => fmt.metric(t.latest_validation)],
    ["steps completed", (t) => fmt.integer(t.steps_completed)],
    ["restarts", (t) => String(t.restarts)],
    ["runs", (t) => String((t.runs || []).length)],
    ["why it ended", (t) => t.end_reason || "—"],
  ];
  for (const [name, get] of facts) rows.push(["Outcome", name, trials.map(get)]);
  rows.push(["Config", "seed", trials.map((t) => String(t.seed))]);
  rows.push(["Config", "searcher note", trials.map((t) => t.searcher_info?.note || "—")]);
  const envKeys = [...new Set(trials.flatMap((t) => Object.keys(lastEnvironment(t))))].sort();
  for (const key of envKeys) rows.push(["Environment (last run)", key, trials.map((t) => fmt.hparam(lastEnvironment(t)[key]))]);
  rows.push(["Environment (last run)", "slots", trials.map((t) => (t.slots || []).join(", ") || "—")]);
  return rows;
}

function diffTable(exp, trials) {
  const onlyDiff = h("input", { type: "checkbox", onchange: () => table.classList.toggle("only-diff", onlyDiff.checked) });
  let section = null;
  const body = [];
  for (const [group, name, values] of diffRows(exp, trials)) {
    if (group !== section) {
      section = group;
      body.push(h("tr", { class: "section-row" }, h("th", { scope: "colgroup", colspan: String(trials.length + 1) }, group)));
    }
    const differs = new Set(values).size > 1;
    body.push(h("tr", { class: differs ? "diff" : "same" },
      h("th", { scope: "row" }, differs ? h("span", { title: "differs", "aria-label": "differs" }, "≠ ") : null, name),
      values.map((v) => h("td", { class: "mono" }, v))));
  }
  const table = h("table", { class: "data-table compare-table" },
    h("caption", { class: "visually-hidden" }, "Hyperparameters, config and environment of the compared trials"),
    h("thead", null, h("tr", null, h("th", { scope: "col" }, ""), trials.map((t, i) =>
      h("th", { scope: "col" }, h("span", { class: "swatch", style: { background: PALETTE[i] } }), h("a", { href: `/trials/${t.id}` }, `Trial ${t.id}`), " ", stateBadge(t.state))))),
    h("tbody", null, body));
  return h("div", null,
    h("div", { class: "toolbar" }, h("h3", { style: { margin: 0 } }, "Hyperparameters, config and environment"), labeled("Only rows that differ", onlyDiff)),
    h("p", { class: "muted" }, "Trials of one experiment share its config; what differs is their hyperparameters, seed and where they ran."),
    h("div", { class: "table-scroll" }, table));
}

export function createCompareView(panel, exp, ids, onClose) {
  let charts = [];
  const controller = new AbortController();
  let shown = null;
  let diffShown = null;
  const chartsBox = h("div", { class: "grid-2" }, loading("metrics"));
  const tableBox = h("div", { class: "card" }, loading("trials"));
  const diffBox = h("section", { class: "card", "aria-label": "What they ran differently" }, loading("what they ran differently"));

  replace(
    panel,
    h("div", { class: "toolbar", dataset: { view: "compare" } },
      h("h2", { style: { margin: 0 } }, `Comparing trials ${ids.join(", ")}`),
      h("button", { type: "button", class: "button", onclick: onClose }, "Back to the experiment")),
    tableBox,
    diffBox,
    h("h3", null, "Metrics ", h("span", { class: "chart-legend" }, ids.map((id, i) =>
      h("span", null, h("span", { class: "swatch", style: { background: PALETTE[i % PALETTE.length] } }), `Trial ${id}  `)))),
    chartsBox,
  );

  async function load(signal) {
    shown = progress(exp);
    const [trials, series] = await Promise.all([
      Promise.all(ids.map((id) => api.trial(id, signal))),
      Promise.all(ids.map((id) => api.trialMetrics(id, { max_points: POINTS }, signal))),
    ]);
    replace(tableBox, diffTable(exp, trials));
    drawMetrics(series.flat());
    // The diff changes with a new run (its capture) or an end, not with every step.
    const runs = trials.map((t) => `${t.id}:${t.run_id}:${t.state}`).join(",");
    if (runs !== diffShown) {
      diffShown = runs;
      loadDiff(signal, trials).catch((error) => {
        if (isAbort(error)) return;
        diffShown = null; // asked again at the next update
        replace(diffBox, h("h3", null, "What they ran differently"), errorBox(error));
      });
    }
  }

  async function loadDiff(signal, trials) {
    const { element, complete } = await runDiff(ids, signal);
    replace(diffBox, element);
    // A running trial's capture arrives in its first seconds: asked again until it has.
    if (!complete && trials.some((t) => t.state === "RUNNING")) diffShown = null;
  }

  function drawMetrics(all) {
    charts.forEach((c) => c.destroy());
    charts = [];
    const pairs = new Map(all.map((s) => [`${s.group}\u0000${s.name}`, { group: s.group, name: s.name }]));
    const order = fmt.metricOrder(exp.metric);
    const keys = [...pairs.entries()].sort((a, b) => order(a[1], b[1])).map(([key]) => key);
    if (!keys.length) {
      replace(chartsBox, h("p", { class: "muted" }, "These trials have not reported any metric yet."));
      return;
    }
    replace(chartsBox);
    for (const key of keys) {
      const [group, name] = key.split("\u0000");
      const box = h("div");
      chartsBox.append(h("div", { class: "chart-card" }, h("h3", null, `${name} `, h("span", { class: "muted" }, `(${group})`)), box));
      const chart = new CurvesChart(box, { height: 240, xLabel: "steps completed", yLabel: name, ariaLabel: `${name} (${group}) of trials ${ids.join(", ")}` });
      chart.setSeries(
        all
          .filter((s) => s.group === group && s.name === name)
          .map((s) => ({
            key: s.trial_id,
            label: `Trial ${s.trial_id}`,
            color: PALETTE[ids.indexOf(s.trial_id) % PALETTE.length],
            xs: s.points.map((p) => p.steps_completed),
            ys: s.points.map((p) => p.value),
          })),
      );
      charts.push(chart);
    }
  }

  function progress(e) {
    return e.trials.filter((t) => ids.includes(t.id)).map((t) => `${t.steps_completed}:${t.state}`).join(",");
  }

  load(controller.signal).catch((error) => {
    if (!isAbort(error)) replace(tableBox, errorBox(error));
  });

  return {
    async update(next, signal) {
      exp = next;
      if (progress(next) !== shown) await load(signal);
    },
    destroy() {
      controller.abort();
      charts.forEach((c) => c.destroy());
    },
  };
}
