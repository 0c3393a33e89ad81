// Charts drawn with uPlot (loaded as the global `uPlot` from /static/vendor): learning
// curves (one line per trial, each with its own steps) and scatter plots. uPlot draws the
// axes, the grid and the lines and zooms on a drag (double click: back); this module adds
// what it lacks for many trials: finding the curve or point under the pointer, drawing it
// on top, a tooltip, and the colours of the current theme.
//
// The chart's element carries data-series-count (lines or points drawn) for tests and
// scripts, and an aria-label that says what it shows.

import { h } from "./dom.js";
import { metric } from "./format.js";
import { cssVar } from "./theme.js";

const HOVER_RADIUS = 10; // px: how close the pointer must be to a curve or point

function themeColors() {
  return {
    axis: cssVar("--text-muted"),
    grid: cssVar("--chart-grid"),
    highlight: cssVar("--accent"),
    background: cssVar("--surface"),
  };
}

function axes(colors, xLabel, yLabel, categories) {
  const axis = (label) => ({
    label,
    stroke: colors.axis,
    grid: { stroke: colors.grid, width: 1 },
    ticks: { stroke: colors.grid, width: 1 },
    font: "12px system-ui, sans-serif",
    labelFont: "12px system-ui, sans-serif",
  });
  const x = axis(xLabel);
  if (categories) {
    // Categories sit at 0, 1, 2...: a tick on each, labelled with its value.
    x.incrs = [1];
    x.values = (u, splits) => splits.map((v) => (Number.isInteger(v) ? categories[v] ?? "" : ""));
  }
  return [x, { ...axis(yLabel), size: 64 }];
}

// A chart in `container` (emptied); subclasses say what data and marks it has. What the
// pointer picks is drawn on a canvas of its own over uPlot's, so hovering never redraws
// the thousands of curves below (a full redraw of 10,000 takes about a second).
class Plot {
  constructor(container, { height = 320, xLabel, yLabel, xLog, yLog, onHover, onClick, ariaLabel, categories }) {
    this.container = container;
    this.height = height;
    this.onHover = onHover;
    this.onClick = onClick;
    this.hovered = null; // {index, x, y, px, py} of the mark under the pointer (css px)
    this.highlighted = null; // key shown on top (from the pointer or from elsewhere)
    this.frame = 0;
    container.replaceChildren();
    container.classList.add("chart");
    container.setAttribute("role", "img");
    container.setAttribute("aria-label", ariaLabel || `${yLabel} by ${xLabel}`);
    this.tooltip = h("div", { class: "chart-tooltip", hidden: true });
    this.layer = h("canvas", { class: "chart-layer", "aria-hidden": "true" });
    const colors = themeColors();
    this.colors = colors;
    this.options = {
      mode: 2,
      width: Math.max(200, container.clientWidth || 600),
      height,
      legend: { show: false },
      cursor: { points: { show: false }, drag: { x: true, y: true, uni: 20 }, dataIdx: () => null },
      scales: {
        x: categories
          ? { time: false, range: () => [-0.5, categories.length - 0.5] }
          : { time: false, distr: xLog ? 3 : 1 },
        // A log axis spans at most 12 decades below its top (uPlot fails on a range
        // like 1e-31..10, and no one reads that many decades).
        y: yLog ? { distr: 3, range: (u, min, max) => uPlot.rangeLog(Math.max(min, max * 1e-12), max, 10, true) } : { distr: 1 },
      },
      axes: axes(colors, xLabel, yLabel, categories),
      hooks: {
        setCursor: [() => this.schedulePointer()],
        draw: [
          (u) => {
            this.drawMarks(u);
            this.drawLayer();
          },
        ],
      },
      series: [{}],
    };
    this.resize = new ResizeObserver(() => {
      const width = container.clientWidth;
      if (this.plot && width && Math.abs(width - this.plot.width) > 2) this.plot.setSize({ width, height: this.height });
    });
    this.resize.observe(container);
  }

  build(series, data) {
    this.plot?.destroy();
    this.options.series = [{}, ...series];
    this.plot = new uPlot(this.options, data, this.container);
    this.plot.over.append(this.layer, this.tooltip);
    this.plot.over.addEventListener("mouseleave", () => this.setHovered(null));
    this.plot.over.addEventListener("click", () => {
      if (this.hovered && this.onClick) this.onClick(this.keyOf(this.hovered.index));
    });
    this.drawLayer();
  }

  schedulePointer() {
    if (this.frame) return;
    this.frame = requestAnimationFrame(() => {
      this.frame = 0;
      if (!this.plot) return;
      const { left, top } = this.plot.cursor;
      this.setHovered(left == null || left < 0 ? null : this.nearest(left, top));
    });
  }

  setHovered(found) {
    const before = this.hovered ? this.keyOf(this.hovered.index) : null;
    this.hovered = found;
    const key = found ? this.keyOf(found.index) : null;
    this.showTooltip(found);
    if (key !== before) {
      this.highlighted = key;
      this.drawLayer();
      this.onHover?.(key);
    }
  }

  // Show `key` on top, as when hovered (null: none); from a table row, for instance.
  highlight(key) {
    if (this.hovered) return; // the pointer decides while it is over the chart
    const value = key === undefined ? null : key;
    if (value === this.highlighted) return;
    this.highlighted = value;
    this.drawLayer();
  }

  showTooltip(found) {
    if (!found) {
      this.tooltip.hidden = true;
      return;
    }
    this.tooltip.hidden = false;
    this.tooltip.textContent = this.describe(found);
    const width = this.plot.over.clientWidth;
    this.tooltip.style.left = `${Math.max(0, Math.min(found.px + 12, width - 200))}px`;
    this.tooltip.style.top = `${Math.max(0, found.py - 36)}px`;
  }

  // The highlight layer: the size of the plot area, cleared and drawn again.
  drawLayer() {
    if (!this.plot) return;
    const ratio = devicePixelRatio;
    const width = this.plot.over.clientWidth;
    const height = this.plot.over.clientHeight;
    if (this.layer.width !== Math.round(width * ratio) || this.layer.height !== Math.round(height * ratio)) {
      this.layer.width = Math.round(width * ratio);
      this.layer.height = Math.round(height * ratio);
      this.layer.style.width = `${width}px`;
      this.layer.style.height = `${height}px`;
    }
    const ctx = this.layer.getContext("2d");
    ctx.setTransform(ratio, 0, 0, ratio, 0, 0);
    ctx.clearRect(0, 0, width, height);
    if (this.highlighted !== null) this.drawHighlight(ctx);
  }

  // Css px in the plot area (what the highlight layer and the cursor use).
  at(value, scale) {
    return this.plot.valToPos(value, scale);
  }

  // Canvas px of uPlot's own canvas (what drawMarks uses).
  px(value, scale) {
    return this.plot.valToPos(value, scale, true);
  }

  clipToPlot(u) {
    const ctx = u.ctx;
    ctx.save();
    ctx.beginPath();
    ctx.rect(u.bbox.left, u.bbox.top, u.bbox.width, u.bbox.height);
    ctx.clip();
    return ctx;
  }

  destroy() {
    cancelAnimationFrame(this.frame);
    this.resize.disconnect();
    this.plot?.destroy();
    this.plot = null;
  }
}

// One line per trial. series: [{key, label, xs, ys, color}], each xs ascending.
export class CurvesChart extends Plot {
  constructor(container, options) {
    super(container, options);
    this.log = !!options.yLog;
    this.xName = options.xLabel;
  }

  setSeries(series) {
    this.series = series.map((s) => (this.log ? positiveOnly(s) : s)).filter((s) => s.xs.length);
    const data = [null, ...this.series.map((s) => [s.xs, s.ys])];
    const sameLines =
      this.plot &&
      this.plot.series.length === this.series.length + 1 &&
      this.series.every((s, i) => this.plot.series[i + 1].key === s.key);
    if (sameLines) {
      this.plot.setData(data);
    } else {
      this.build(
        this.series.map((s) => ({
          key: s.key,
          label: s.label,
          stroke: s.color,
          width: 1.25,
          points: { show: false }, // a curve of one or two points gets dots in drawMarks
        })),
        data,
      );
    }
    this.container.dataset.seriesCount = String(this.series.length);
  }

  keyOf(index) {
    return this.series[index].key;
  }

  // The curve nearest the pointer (css px in the plot area): the vertical distance to
  // each curve where it crosses the pointer's x, or the distance to its nearest point.
  nearest(cx, cy) {
    let best = null;
    let bestDistance = HOVER_RADIUS;
    const xValue = this.plot.posToVal(cx, "x");
    this.series.forEach((s, index) => {
      const xs = s.xs;
      const i = lowerBound(xs, xValue);
      for (const j of [i - 1, i]) {
        if (j < 0 || j >= xs.length) continue;
        const px = this.at(xs[j], "x");
        const py = this.at(s.ys[j], "y");
        let distance = Math.hypot(px - cx, py - cy);
        if (j === i - 1 && j + 1 < xs.length) {
          const qx = this.at(xs[j + 1], "x");
          const qy = this.at(s.ys[j + 1], "y");
          if (qx !== px && cx >= px && cx <= qx) distance = Math.min(distance, Math.abs(py + ((cx - px) / (qx - px)) * (qy - py) - cy));
        }
        if (distance < bestDistance) {
          bestDistance = distance;
          best = { index, x: xs[j], y: s.ys[j], px, py };
        }
      }
    });
    return best;
  }

  describe(found) {
    const s = this.series[found.index];
    return `${s.label} · ${this.xName} ${found.x} · ${metric(found.y)}`;
  }

  // Dots for the curves too short to see as lines (a trial stopped at its first rung).
  drawMarks(u) {
    const ctx = this.clipToPlot(u);
    for (const line of this.series) {
      if (line.xs.length > 2) continue;
      ctx.fillStyle = line.color;
      line.xs.forEach((x, i) => {
        ctx.beginPath();
        ctx.arc(this.px(x, "x"), this.px(line.ys[i], "y"), 3.5 * devicePixelRatio, 0, 2 * Math.PI);
        ctx.fill();
      });
    }
    ctx.restore();
  }

  drawHighlight(ctx) {
    const s = this.series.find((line) => line.key === this.highlighted);
    if (!s) return;
    ctx.lineWidth = 3;
    ctx.strokeStyle = ctx.fillStyle = this.colors.highlight;
    ctx.beginPath();
    s.xs.forEach((x, i) => {
      if (i === 0) ctx.moveTo(this.at(x, "x"), this.at(s.ys[i], "y"));
      else ctx.lineTo(this.at(x, "x"), this.at(s.ys[i], "y"));
    });
    ctx.stroke();
    if (s.xs.length <= 2) {
      s.xs.forEach((x, i) => {
        ctx.beginPath();
        ctx.arc(this.at(x, "x"), this.at(s.ys[i], "y"), 5, 0, 2 * Math.PI);
        ctx.fill();
      });
    }
  }
}

// Points: [{key, x, y, color, label}]. Several points may share a key (one trial).
export class ScatterChart extends Plot {
  constructor(container, options) {
    super(container, options);
    this.xName = options.xLabel;
    this.yName = options.yLabel;
    // A category axis has the categories at 0, 1, 2...: a point is named by its category.
    this.describeX = options.categories ? (x) => options.categories[x] : (x) => metric(x);
    this.radius = options.radius || 4;
  }

  setPoints(points) {
    // Room around the points, so those at the extremes are not cut in half by the frame.
    const pad = (u, min, max) => uPlot.rangeNum(min, max, 0.08, true);
    if (!this.options.scales.x.range && this.options.scales.x.distr !== 3) this.options.scales.x.range = pad;
    this.options.scales.y.range = pad;
    this.points = points.filter((p) => p.y !== null && p.y !== undefined && p.x !== null && p.x !== undefined);
    const xs = this.points.map((p) => p.x);
    const ys = this.points.map((p) => p.y);
    // uPlot ranges the axes on this series; the points themselves are drawn in drawMarks.
    this.build([{ stroke: "transparent", paths: () => null, points: { show: false } }], [null, [xs, ys]]);
    this.container.dataset.seriesCount = String(this.points.length);
  }

  keyOf(index) {
    return this.points[index].key;
  }

  nearest(cx, cy) {
    let best = null;
    let bestDistance = HOVER_RADIUS;
    this.points.forEach((p, index) => {
      const px = this.at(p.x, "x");
      const py = this.at(p.y, "y");
      const distance = Math.hypot(px - cx, py - cy);
      if (distance < bestDistance) {
        bestDistance = distance;
        best = { index, x: p.x, y: p.y, px, py };
      }
    });
    return best;
  }

  describe(found) {
    const p = this.points[found.index];
    return `${p.label} · ${this.xName} ${this.describeX(p.x)} · ${this.yName} ${metric(p.y)}`;
  }

  drawMarks(u) {
    const ctx = this.clipToPlot(u);
    const r = this.radius * devicePixelRatio;
    for (const p of this.points) {
      ctx.fillStyle = p.color;
      ctx.beginPath();
      ctx.arc(this.px(p.x, "x"), this.px(p.y, "y"), r, 0, 2 * Math.PI);
      ctx.fill();
    }
    ctx.restore();
  }

  drawHighlight(ctx) {
    ctx.fillStyle = this.colors.highlight;
    ctx.strokeStyle = this.colors.background;
    ctx.lineWidth = 2;
    for (const p of this.points) {
      if (p.key !== this.highlighted) continue;
      ctx.beginPath();
      ctx.arc(this.at(p.x, "x"), this.at(p.y, "y"), this.radius * 1.6, 0, 2 * Math.PI);
      ctx.fill();
      ctx.stroke();
    }
  }
}

function lowerBound(sorted, value) {
  let lo = 0;
  let hi = sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (sorted[mid] < value) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

function positiveOnly(s) {
  const xs = [];
  const ys = [];
  s.xs.forEach((x, i) => {
    if (s.ys[i] > 0) {
      xs.push(x);
      ys.push(s.ys[i]);
    }
  });
  return { ...s, xs, ys };
}

// Exponential moving average, as TensorBoard smooths (0: none, 0.99: very smooth),
// debiased so the first points are not pulled towards zero.
export function smooth(ys, weight) {
  if (!weight) return ys;
  let last = 0;
  let debias = 0;
  return ys.map((y) => {
    if (y === null || !isFinite(y)) return y;
    last = last * weight + (1 - weight) * y;
    debias = debias * weight + (1 - weight);
    return last / debias;
  });
}
