// @ts-check
// A trial's metrics: one chart per metric name with a line per group that reported it
// (training, validation, and any group the code named with report_metrics; log scale and
// smoothing as the experiment's curves have, query log and smooth), and the summary of every
// metric it reported (count, last, min, max, best).

import { api } from "../api.js";
import { CurvesChart } from "../charts.js";
import { curveOptions } from "../curve_options.js";
import { PALETTE } from "../palette.js";
import { h, replace, errorBox, loading, emptyState, simpleTable } from "../dom.js";
import * as fmt from "../format.js";

const POINTS = 1000;
// A Map, not an object: a group may be named "constructor" or "toString".
const GROUP_COLORS = new Map([["training", PALETTE[0]], ["validation", PALETTE[1]]]);

// A colour per group, the same in every chart of the trial: training and validation keep
// theirs; the trial's other groups, in name order, take the rest of the palette in turn.
/**
 * @param {{group: string}[]} series
 * @returns {(group: string) => string}
 */
export function groupColors(series) {
  const others = [...new Set(series.map((s) => s.group))].filter((g) => !GROUP_COLORS.has(g)).sort();
  const spare = PALETTE.slice(2);
  return (group) => GROUP_COLORS.get(group) ?? spare[Math.max(0, others.indexOf(group)) % spare.length];
}

function summaryTable(metrics) {
  return simpleTable(
    "Every metric the trial reported",
    ["Metric", "Group", "Points", "Last", "At step", "Min", "Max", "Best", "Best at step"],
    metrics.map((m) => [m.name, m.group, fmt.integer(m.count), fmt.metric(m.last), fmt.integer(m.last_step),
      fmt.metric(m.min), fmt.metric(m.max), fmt.metric(m.best), fmt.integer(m.best_step)]),
    { numeric: [2, 3, 4, 5, 6, 7, 8] },
  );
}

// What the charts were loaded for: a new step, state or run loads them again.
function progressKey(trial) {
  return `${trial.steps_completed}:${trial.state}:${trial.run_id}`;
}

export function createMetricsTab(panel, page) {
  let charts = [];
  let shown = null;
  let series = null; // until the first answer
  const display = curveOptions((key) => {
    if (key === "log") dropCharts();
    draw();
  });
  const chartsBox = h("div", { class: "grid-2" }, loading("metrics"));
  const summaryBox = h("div");
  replace(panel, h("div", { class: "toolbar" }, display.controls), chartsBox, h("h2", { style: { marginTop: "18px" } }, "Summary"), summaryBox);

  function dropCharts() {
    charts.forEach((c) => c.chart.destroy());
    charts = [];
  }

  async function load(signal) {
    const trial = page.trial;
    shown = progressKey(trial);
    replace(summaryBox, trial.metrics.length ? summaryTable(trial.metrics) : h("p", { class: "muted" }, "No metric reported yet."));
    series = await api.trialMetrics(trial.id, { max_points: POINTS }, signal);
    draw();
  }

  function draw() {
    if (!series) return;
    const order = fmt.metricOrder(page.trial.searcher_metric);
    const colorOf = groupColors(series);
    const names = [...new Set(series.slice().sort(order).map((s) => s.name))];
    // A chart's groups are part of what it is: a new group redraws its legend and colours.
    const groupsOf = (name) => [...new Set(series.filter((s) => s.name === name).map((s) => s.group))];
    const layout = names.map((name) => `${name}\u0000${groupsOf(name).join("\u0000")}`);
    const same = charts.length === names.length && charts.every((c, i) => c.layout === layout[i]);
    if (!names.length) {
      dropCharts();
      replace(chartsBox, emptyState("No metrics yet", "Training code reports them with ctx.train.report_training_metrics, report_validation_metrics and report_metrics(group, ...); they appear here as they arrive."));
      return;
    }
    if (!same) {
      dropCharts();
      replace(chartsBox);
      charts = names.map((name, i) => {
        const box = h("div");
        const groups = groupsOf(name);
        chartsBox.append(h("div", { class: "chart-card" },
          h("h3", null, name, " ", groups.map((g) => h("span", { class: "chart-legend" }, h("span", { class: "swatch", style: { background: colorOf(g) } }), `${g} `))),
          box));
        return { name, layout: layout[i], chart: new CurvesChart(box, { height: 240, xLabel: "steps completed", yLabel: name, yLog: display.log, ariaLabel: `${name} of trial ${page.trial.id} by steps completed` }) };
      });
    }
    for (const { name, chart } of charts) {
      chart.setSeries(series.filter((s) => s.name === name).map((s) => ({
        key: s.group,
        label: s.group,
        color: colorOf(s.group),
        xs: s.points.map((p) => p.steps_completed),
        ys: display.values(s.points.map((p) => p.value)),
      })));
    }
  }

  load().catch((error) => replace(chartsBox, errorBox(error)));
  return {
    async update(trial, signal) {
      if (progressKey(trial) !== shown) await load(signal);
    },
    destroy: dropCharts,
  };
}
