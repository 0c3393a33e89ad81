// @ts-check
// A heat map of two hyperparameters: the plane cut into cells (numbers in equal bins, on a
// log scale for log hyperparameters; other values one cell each); a cell's colour is the
// best metric of the trials in it. SVG, so each cell has a title a screen reader reads.

import { rankColors } from "./palette.js";
import { metric } from "./format.js";

const SVG = "http://www.w3.org/2000/svg";
const MARGIN = { top: 10, right: 16, bottom: 86, left: 110 };
const BINS = 8;

/** @typedef {import("./hparam_axis.js").HparamAxis} HparamAxis */

/**
 * @param {string} tag
 * @param {Record<string, string | number> | null} attrs
 * @param {string} [text]
 */
function el(tag, attrs, text) {
  const node = document.createElementNS(SVG, tag);
  for (const [key, value] of Object.entries(attrs || {})) node.setAttribute(key, String(value));
  if (text !== undefined) node.textContent = text;
  return node;
}

// points: [{x, y, value}] (hparam values and the metric); smallerIsBetter orders colours.
/**
 * @param {HTMLElement} container
 * @param {{xAxis: HparamAxis, yAxis: HparamAxis, points: {x: unknown, y: unknown, value: number | null | undefined}[],
 *          smallerIsBetter: boolean, metricName: string, height?: number}} options
 */
export function drawHeatmap(container, { xAxis, yAxis, points, smallerIsBetter, metricName, height = 360 }) {
  const width = Math.max(420, Math.min(900, container.clientWidth || 640));
  const xBins = xAxis.bins(BINS);
  const yBins = yAxis.bins(BINS);
  const cells = new Map();
  for (const p of points) {
    const bx = xAxis.binOf(p.x, xBins.length);
    const by = yAxis.binOf(p.y, yBins.length);
    if (bx === null || by === null || p.value === null || p.value === undefined) continue;
    const key = `${bx},${by}`;
    const cell = cells.get(key) || { bx, by, values: /** @type {number[]} */ ([]) };
    cell.values.push(p.value);
    cells.set(key, cell);
  }
  /** @param {number[]} values */
  const best = (values) => (smallerIsBetter ? Math.min(...values) : Math.max(...values));
  const ranked = [...cells.values()].map((c) => ({ ...c, best: best(c.values) }));
  ranked.sort((a, b) => (smallerIsBetter ? a.best - b.best : b.best - a.best));

  const plotW = width - MARGIN.left - MARGIN.right;
  const plotH = height - MARGIN.top - MARGIN.bottom;
  const cw = plotW / xBins.length;
  const ch = plotH / yBins.length;
  const svg = el("svg", {
    viewBox: `0 0 ${width} ${height}`,
    width: String(width),
    height: String(height),
    role: "img",
    "aria-label": `Heat map of the best ${metricName} by ${xAxis.name} and ${yAxis.name}`,
    class: "heatmap",
  });
  svg.dataset.seriesCount = String(ranked.length);
  svg.append(el("rect", { x: MARGIN.left, y: MARGIN.top, width: plotW, height: plotH, fill: "none", class: "axis-line", "stroke-width": 1 }));
  const color = rankColors(ranked.length, 0.9);
  ranked.forEach((cell, rank) => {
    const x = MARGIN.left + cell.bx * cw;
    const y = MARGIN.top + (yBins.length - 1 - cell.by) * ch;
    const rect = el("rect", { x: x + 1, y: y + 1, width: Math.max(1, cw - 2), height: Math.max(1, ch - 2), rx: 3, fill: color(rank) });
    const mean = cell.values.reduce((a, b) => a + b, 0) / cell.values.length;
    rect.append(el("title", null, `${xAxis.name} ${xBins[cell.bx].label}, ${yAxis.name} ${yBins[cell.by].label}: ` +
      `${cell.values.length} trial(s), best ${metricName} ${metric(cell.best)}, mean ${metric(mean)}`));
    svg.append(rect);
    if (cw > 44 && ch > 18) {
      svg.append(el("text", { x: x + cw / 2, y: y + ch / 2 + 4, "text-anchor": "middle", "pointer-events": "none", class: "cell-text" }, metric(cell.best)));
    }
  });
  xBins.forEach((bin, i) => {
    const x = MARGIN.left + (i + 0.5) * cw;
    const y = MARGIN.top + plotH + 14;
    svg.append(el("text", { x, y, "text-anchor": "end", transform: `rotate(-30 ${x} ${y})`, class: "muted-text" }, bin.label));
  });
  yBins.forEach((bin, i) => {
    const y = MARGIN.top + (yBins.length - 1 - i + 0.5) * ch + 4;
    svg.append(el("text", { x: MARGIN.left - 6, y, "text-anchor": "end", class: "muted-text" }, bin.label));
  });
  svg.append(el("text", { x: MARGIN.left + plotW / 2, y: height - 4, "text-anchor": "middle" }, xAxis.name + (xAxis.log ? " (log)" : "")));
  const ly = MARGIN.top + plotH / 2;
  svg.append(el("text", { x: 12, y: ly, "text-anchor": "middle", transform: `rotate(-90 12 ${ly})` }, yAxis.name + (yAxis.log ? " (log)" : "")));
  container.replaceChildren(svg);
}
