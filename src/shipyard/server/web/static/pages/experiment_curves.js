// @ts-check
// The experiment's learning curves: one line per trial for the metric picked, on a linear
// or log scale, smoothed or not; hovering a line highlights its trial in the table below
// and the other way round; a click on a line opens the trial. Query: metric, group, log,
// smooth.

import { api, isAbort } from "../api.js";
import { CurvesChart } from "../charts.js";
import { curveOptions } from "../curve_options.js";
import { rankColors } from "../palette.js";
import { h, replace, labeled, errorBox, loading, emptyState } from "../dom.js";
import { query, updateQuery, navigate } from "../router.js";
import { bestLast, ranks } from "./ranking.js";
import { trialsTable } from "./trials_table.js";

// Trial id -> colour by its rank (good trials stand out); fainter the more trials there are.
// rank: ranks(exp), computed once a draw for this and bestLast.
export function colorsByRank(exp, rank) {
  const alpha = rank.size > 1000 ? 0.3 : rank.size > 100 ? 0.55 : 0.85;
  const color = rankColors(rank.size, alpha);
  const colors = new Map([...rank].map(([id, r]) => [id, color(r)]));
  for (const t of exp.trials) if (!colors.has(t.id)) colors.set(t.id, "rgba(128, 128, 128, 0.6)");
  return colors;
}

// What the curves of a search look like: the steps of each trial, for one metric.
function progressKey(exp) {
  return exp.trials.map((t) => `${t.id}:${t.steps_completed}:${t.state}`).join(",");
}

export function createCurvesTab(panel, page) {
  const params = query();
  let exp = page.experiment;
  const state = {
    metric: params.get("metric") || exp.metric,
    group: params.get("group") || "validation",
  };
  let names = [];
  let raw = [];
  let chart = null;
  let fetchedFor = null;
  let pending = null; // the AbortController of the load under way

  const metricSelect = h("select", { onchange: () => pickMetric(metricSelect.value) });
  const display = curveOptions((key) => {
    if (key === "log") dropChart();
    draw();
  });
  const chartBox = h("div", { class: "chart", id: "curves-chart" });
  const note = h("p", { class: "chart-legend" });
  const chartArea = h("div", null, loading("curves"));
  const table = trialsTable(exp, {
    sort: params.get("sort"),
    onSort: (sort) => updateQuery({ sort }),
    selection: page.selection,
    onHover: (id) => chart?.highlight(id),
  });

  replace(
    panel,
    h("div", { class: "toolbar" },
      labeled("Metric", metricSelect),
      display.controls,
    ),
    h("div", { class: "chart-card" }, chartArea),
    h("h2", { style: { marginTop: "18px" } }, "Trials"),
    page.compareBar(),
    table.element,
  );

  function pickMetric(value) {
    const [group, ...rest] = value.split("/");
    state.group = group;
    state.metric = rest.join("/");
    updateQuery({ metric: state.metric === exp.metric ? null : state.metric, group: group === "validation" ? null : group });
    dropChart();
    replace(chartArea, loading("curves"));
    load();
  }

  function dropChart() {
    chart?.destroy();
    chart = null;
  }

  function fillMetricPicker() {
    const options = names.length ? names : [{ name: state.metric, group: state.group }];
    if (!options.some((n) => n.name === state.metric && n.group === state.group)) options.unshift({ name: state.metric, group: state.group });
    replace(metricSelect, options.map((n) => h("option", { value: `${n.group}/${n.name}`, selected: n.name === state.metric && n.group === state.group }, `${n.name} (${n.group})`)));
  }

  // The last load asked wins: it aborts the one before (another metric, older progress),
  // whose answer could come later.
  async function load() {
    fetchedFor = progressKey(exp);
    pending?.abort();
    const controller = (pending = new AbortController());
    try {
      // The master picks the points a trial from the trial count (and has them stored).
      raw = await api.curves(exp.id, { name: state.metric, group: state.group }, controller.signal);
      draw();
    } catch (error) {
      if (!isAbort(error)) replace(chartArea, errorBox(error));
    }
  }

  function draw() {
    if (!raw.length) {
      dropChart();
      replace(chartArea, emptyState(`No ${state.metric} (${state.group}) reported yet`,
        exp.trials.length ? "The curves appear as the trials report this metric." : "The trials appear once the experiment is scheduled."));
      return;
    }
    const rank = ranks(exp);
    const colors = colorsByRank(exp, rank);
    const order = bestLast(rank);
    const lines = raw.slice().sort((a, b) => order(a.trial_id, b.trial_id)).map((s) => ({
      key: s.trial_id,
      label: `Trial ${s.trial_id}`,
      color: colors.get(s.trial_id) || "gray",
      xs: s.steps,
      ys: display.values(s.values),
    }));
    if (!chart || !chartArea.contains(chartBox)) {
      dropChart();
      replace(chartArea, chartBox, note);
      chart = new CurvesChart(chartBox, {
        xLabel: "steps completed",
        yLabel: state.metric,
        yLog: display.log,
        height: 340,
        ariaLabel: `Learning curves: ${state.metric} (${state.group}) by steps completed, one line per trial`,
        onHover: (id) => table.highlight(id),
        onClick: (id) => navigate(`/trials/${id}`),
      });
    }
    chart.setSeries(lines);
    replace(note, `${lines.length} ${lines.length === 1 ? "trial" : "trials"} · colour: rank on ${exp.metric}, best `,
      h("span", { class: "gradient-key", "aria-hidden": "true" }), " worst · drag to zoom, double-click to reset, click a line to open its trial");
  }

  api.metricNames(exp.id).then((list) => {
    names = list;
    fillMetricPicker();
  }).catch(() => fillMetricPicker());
  fillMetricPicker();
  load();

  return {
    // A new view of the experiment (live update): the table at once, the curves when a
    // trial has made progress.
    async update(next) {
      exp = next;
      table.update(next);
      if (progressKey(next) !== fetchedFor) await load();
    },
    selectionChanged: () => table.refresh(),
    destroy() {
      pending?.abort();
      dropChart();
    },
  };
}
