// @ts-check
// How the hyperparameters relate to the metric: parallel coordinates of all of them, a
// heat map of two (picked; query hx, hy), and a scatter of each against the best metric.
// Pointing at a trial in one view highlights it in the others; a click opens it.

import { ScatterChart } from "../charts.js";
import { h, replace, labeled, select, emptyState } from "../dom.js";
import { hparam } from "../format.js";
import { drawHeatmap } from "../heatmap.js";
import { HparamAxis } from "../hparam_axis.js";
import { ParallelCoordinates } from "../parcoords.js";
import { query, updateQuery, navigate } from "../router.js";
import { colorsByRank } from "./experiment_curves.js";
import { bestLast, ranks } from "./ranking.js";
import { varyingHparams } from "./trials_table.js";

// The trials with the searcher metric (those ranked), the best last (drawn on top).
function scored(exp, rank) {
  const order = bestLast(rank);
  return exp.trials.filter((t) => rank.has(t.id)).sort((a, b) => order(a.id, b.id));
}

function signature(exp) {
  return exp.trials.filter((t) => t.best_validation !== null && t.best_validation !== undefined).map((t) => `${t.id}:${t.best_validation}`).join(",");
}

export function createHparamsTab(panel, page) {
  let exp = page.experiment;
  let shown = null;
  let views = [];

  function highlightAll(key, from) {
    for (const view of views) if (view !== from) view.highlight(key);
  }

  function render() {
    for (const view of views) view.destroy?.();
    views = [];
    shown = signature(exp);
    const names = varyingHparams(exp);
    const rank = ranks(exp);
    const trials = scored(exp, rank);
    if (!names.length) {
      replace(panel, emptyState("No hyperparameter varies", "Every trial has the same hyperparameters; a search over a range (a searcher other than single) compares them here."));
      return;
    }
    if (!trials.length) {
      replace(panel, emptyState(`No trial has reported ${exp.metric} yet`, "These views fill in as trials report validation metrics."));
      return;
    }
    const hpConfig = exp.config?.hyperparameters || {};
    const colors = colorsByRank(exp, rank);
    const axes = names.map((name) => new HparamAxis(name, trials.map((t) => t.hparams?.[name]), hpConfig[name]));
    const metricAxis = new HparamAxis(`best ${exp.metric}`, trials.map((t) => t.best_validation), null);
    const label = (t) => `Trial ${t.id}`;
    const onClick = (key) => navigate(`/trials/${key}`);

    const parallelBox = h("div", { id: "parallel-coordinates" });
    const heatBox = h("div", { class: "heatmap-box" });
    const scatterGrid = h("div", { class: "grid-2" });
    replace(
      panel,
      h("div", { class: "chart-card" },
        h("h3", null, "Parallel coordinates"),
        parallelBox,
        h("p", { class: "chart-legend" }, `${trials.length} trials with ${exp.metric} · best ${exp.metric} at the top of its axis · colour: rank, best `,
          h("span", { class: "gradient-key", "aria-hidden": "true" }), " worst")),
      heatmapCard(heatBox, names, axes, trials),
      h("h2", { style: { marginTop: "18px" } }, `Each hyperparameter against best ${exp.metric}`),
      scatterGrid,
    );

    const parallel = new ParallelCoordinates(parallelBox, {
      axes: [...axes, metricAxis],
      rows: trials.map((t) => ({ key: t.id, label: label(t), color: colors.get(t.id), values: [...names.map((n) => t.hparams?.[n]), t.best_validation] })),
      invertLast: exp.smaller_is_better,
      onHover: (key) => highlightAll(key, parallel),
      onClick,
    });
    views.push(parallel);

    axes.forEach((axis) => {
      const box = h("div");
      scatterGrid.append(h("div", { class: "chart-card" }, h("h3", null, axis.name + (axis.log ? " (log scale)" : "")), box));
      const chart = new ScatterChart(box, {
        height: 240,
        xLabel: axis.name,
        yLabel: exp.metric,
        xLog: axis.log,
        categories: axis.numeric ? null : axis.categories,
        ariaLabel: `Best ${exp.metric} against ${axis.name}, one point per trial`,
        onHover: (key) => highlightAll(key, chart),
        onClick,
      });
      chart.setPoints(trials.map((t) => {
        const value = t.hparams?.[axis.name];
        return { key: t.id, label: label(t), color: colors.get(t.id), y: t.best_validation,
          x: axis.numeric ? value : axis.categories.indexOf(hparam(value)) };
      }));
      views.push(chart);
    });
  }

  function heatmapCard(box, names, axes, trials) {
    if (names.length < 2) {
      return h("div", { class: "chart-card", style: { marginTop: "12px" } }, h("h3", null, "Heat map"),
        h("p", { class: "muted" }, `A heat map needs two hyperparameters that vary; this search varies only ${names[0]}.`));
    }
    const params = query();
    let xName = names.includes(params.get("hx")) ? params.get("hx") : names[0];
    let yName = names.includes(params.get("hy")) ? params.get("hy") : names[1];
    const xSelect = select(names, xName, { onchange: () => { xName = xSelect.value; updateQuery({ hx: xName }); draw(); } });
    const ySelect = select(names, yName, { onchange: () => { yName = ySelect.value; updateQuery({ hy: yName }); draw(); } });
    function draw() {
      const xAxis = axes[names.indexOf(xName)];
      const yAxis = axes[names.indexOf(yName)];
      drawHeatmap(box, {
        xAxis,
        yAxis,
        metricName: exp.metric,
        smallerIsBetter: exp.smaller_is_better,
        points: trials.map((t) => ({ x: t.hparams?.[xName], y: t.hparams?.[yName], value: t.best_validation })),
      });
    }
    requestAnimationFrame(draw); // once the card is in the page and has its width
    return h("div", { class: "chart-card", style: { marginTop: "12px" } },
      h("div", { class: "toolbar" }, h("h3", { style: { margin: 0 } }, "Heat map"), labeled("x", xSelect), labeled("y", ySelect)),
      h("p", { class: "chart-legend" }, `Each cell: the best ${exp.metric} of the trials in it (hover for the count and mean).`),
      box);
  }

  render();
  return {
    update(next) {
      exp = next;
      if (signature(next) !== shown) render();
    },
    destroy: () => views.forEach((view) => view.destroy?.()),
  };
}
