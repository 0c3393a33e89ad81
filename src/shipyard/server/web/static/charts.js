// @ts-check
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
import { lowerBound, positiveOnly } from "./series.js";
import { cssVar } from "./theme.js";

/** @typedef {string | number} Key a line's or a point's trial (or group) */
/** @typedef {{index: number, x: number, y: number | null, px: number, py: number}} Found */
/**
 * @typedef {object} PlotOptions
 * @property {number} [height]
 * @property {string} xLabel
 * @property {string} yLabel
 * @property {boolean} [xLog]
 * @property {boolean} [yLog]
 * @property {(key: Key | null) => void} [onHover]
 * @property {(key: Key) => void} [onClick]
 * @property {string} [ariaLabel]
 * @property {string[] | null} [categories] a category x axis: these at 0, 1, 2...
 * @property {number} [radius] of a scatter's points
 */

const HOVER_RADIUS = 10; // px: how close the pointer must be to a curve or point

/** @typedef {{axis: string, grid: string, highlight: string, background: string}} Colors */

/** @returns {Colors} */
function themeColors() {
  return {
    axis: cssVar("--text-muted"),
    grid: cssVar("--chart-grid"),
    highlight: cssVar("--accent"),
    background: cssVar("--surface"),
  };
}

/**
 * @param {Colors} colors
 * @param {string} xLabel
 * @param {string} yLabel
 * @param {string[] | null | undefined} categories
 * @returns {uPlot.Axis[]}
 */
function axes(colors, xLabel, yLabel, categories) {
  /** @param {string} label @returns {uPlot.Axis} */
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
    x.values = (_u, splits) => splits.map((v) => (Number.isInteger(v) ? categories[v] ?? "" : ""));
  }
  return [x, { ...axis(yLabel), size: 64 }];
}

// A chart in `container` (emptied); subclasses say what data and marks it has. What the
// pointer picks is drawn on a canvas of its own over uPlot's, so hovering never redraws
// the thousands of curves below (a full redraw of 10,000 takes about a second).
class Plot {
  /**
   * @param {HTMLElement} container
   * @param {PlotOptions} options
   */
  constructor(container, { height = 320, xLabel, yLabel, xLog, yLog, onHover, onClick, ariaLabel, categories }) {
    this.container = container;
    this.height = height;
    this.onHover = onHover;
    this.onClick = onClick;
    /** @type {Found | null} */
    this.hovered = null; // the mark under the pointer (css px)
    /** @type {Key | null} */
    this.highlighted = null; // key shown on top (from the pointer or from elsewhere)
    /** @type {uPlot | null} */
    this.plot = null;
    this.frame = 0;
    container.replaceChildren();
    container.classList.add("chart");
    container.setAttribute("role", "img");
    container.setAttribute("aria-label", ariaLabel || `${yLabel} by ${xLabel}`);
    this.tooltip = h("div", { class: "chart-tooltip", hidden: true });
    this.layer = h("canvas", { class: "chart-layer", "aria-hidden": "true" });
    const colors = themeColors();
    this.colors = colors;
    /** @type {uPlot.Options & {scales: {x: uPlot.Scale, y: uPlot.Scale}}} */
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
        y: yLog ? { distr: 3, range: (_u, min, max) => uPlot.rangeLog(Math.max(min, max * 1e-12), max, 10, true) } : { distr: 1 },
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

  /**
   * @param {uPlot.Series[]} series
   * @param {uPlot.AlignedData} data
   */
  build(series, data) {
    this.plot?.destroy();
    this.options.series = [{}, ...series];
    const plot = (this.plot = new uPlot(this.options, data, this.container));
    plot.over.append(this.layer, this.tooltip);
    plot.over.addEventListener("mouseleave", () => this.setHovered(null));
    plot.over.addEventListener("click", () => {
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
      this.setHovered(left == null || left < 0 ? null : this.nearest(left, /** @type {number} */ (top)));
    });
  }

  /** @param {Found | null} found */
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
  /** @param {Key | null | undefined} key */
  highlight(key) {
    if (this.hovered) return; // the pointer decides while it is over the chart
    const value = key === undefined ? null : key;
    if (value === this.highlighted) return;
    this.highlighted = value;
    this.drawLayer();
  }

  /** @param {Found | null} found */
  showTooltip(found) {
    if (!found || !this.plot) {
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
    const ctx = /** @type {CanvasRenderingContext2D} */ (this.layer.getContext("2d"));
    ctx.setTransform(ratio, 0, 0, ratio, 0, 0);
    ctx.clearRect(0, 0, width, height);
    if (this.highlighted !== null) this.drawHighlight(ctx);
  }

  // Css px in the plot area (what the highlight layer and the cursor use).
  /** @param {number | null} value @param {string} scale */
  at(value, scale) {
    return /** @type {uPlot} */ (this.plot).valToPos(/** @type {number} */ (value), scale);
  }

  // Canvas px of uPlot's own canvas (what drawMarks uses).
  /** @param {number | null} value @param {string} scale */
  px(value, scale) {
    return /** @type {uPlot} */ (this.plot).valToPos(/** @type {number} */ (value), scale, true);
  }

  /** @param {uPlot} u */
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

  // What a subclass has: its marks, how they are found and told, and drawn.
  /** @param {number} _index @returns {Key} */
  keyOf(_index) {
    throw new Error("a Plot subclass names its marks");
  }

  /** @param {number} _cx @param {number} _cy @returns {Found | null} */
  nearest(_cx, _cy) {
    throw new Error("a Plot subclass finds its marks");
  }

  /** @param {Found} _found @returns {string} */
  describe(_found) {
    throw new Error("a Plot subclass describes its marks");
  }

  /** @param {uPlot} _u */
  drawMarks(_u) {
    throw new Error("a Plot subclass draws its marks");
  }

  /** @param {CanvasRenderingContext2D} _ctx */
  drawHighlight(_ctx) {
    throw new Error("a Plot subclass draws its highlight");
  }
}

/** @typedef {{key: Key, label: string, xs: number[], ys: (number | null)[], color: string}} Line */

// One line per trial, each xs ascending.
export class CurvesChart extends Plot {
  /**
   * @param {HTMLElement} container
   * @param {PlotOptions} options
   */
  constructor(container, options) {
    super(container, options);
    this.log = !!options.yLog;
    this.xName = options.xLabel;
    /** @type {Line[]} */
    this.series = [];
  }

  /** @param {Line[]} series */
  setSeries(series) {
    this.series = series.map((s) => (this.log ? positiveOnly(s) : s)).filter((s) => s.xs.length);
    // mode 2: each series its own [xs, ys] (uPlot's types know only the aligned data).
    const data = /** @type {uPlot.AlignedData} */ (/** @type {unknown} */ ([null, ...this.series.map((s) => [s.xs, s.ys])]));
    const plot = this.plot;
    const sameLines =
      plot &&
      plot.series.length === this.series.length + 1 &&
      this.series.every((s, i) => /** @type {uPlot.Series & {key?: Key}} */ (plot.series[i + 1]).key === s.key);
    if (plot && sameLines) {
      plot.setData(data);
    } else {
      this.build(
        this.series.map((s) => /** @type {uPlot.Series} */ ({
          key: s.key,
          label: s.label,
          stroke: s.color,
          width: 1,
          points: { show: false }, // a curve of one or two points gets dots in drawMarks
        })),
        data,
      );
    }
    this.container.dataset.seriesCount = String(this.series.length);
  }

  /** @param {number} index */
  keyOf(index) {
    return this.series[index].key;
  }

  // The curve nearest the pointer (css px in the plot area): the vertical distance to
  // each curve where it crosses the pointer's x, or the distance to its nearest point.
  /** @param {number} cx @param {number} cy */
  nearest(cx, cy) {
    /** @type {Found | null} */
    let best = null;
    let bestDistance = HOVER_RADIUS;
    const xValue = /** @type {uPlot} */ (this.plot).posToVal(cx, "x");
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

  /** @param {Found} found */
  describe(found) {
    const s = this.series[found.index];
    return `${s.label} · ${this.xName} ${found.x} · ${metric(found.y)}`;
  }

  // Dots for the curves too short to see as lines (a trial stopped at its first rung).
  /** @param {uPlot} u */
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

  /** @param {CanvasRenderingContext2D} ctx */
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

/** @typedef {{key: Key, label: string, x: number, y: number, color: string}} Point */

// Several points may share a key (one trial).
export class ScatterChart extends Plot {
  /**
   * @param {HTMLElement} container
   * @param {PlotOptions} options
   */
  constructor(container, options) {
    super(container, options);
    this.xName = options.xLabel;
    this.yName = options.yLabel;
    // A category axis has the categories at 0, 1, 2...: a point is named by its category.
    const categories = options.categories;
    /** @type {(x: number) => string} */
    this.describeX = categories ? (x) => categories[x] : (x) => metric(x);
    this.radius = options.radius || 4;
    /** @type {Point[]} */
    this.points = [];
  }

  // Points without x or y are left out.
  /** @param {{key: Key, label: string, x: number | null | undefined, y: number | null | undefined, color: string}[]} points */
  setPoints(points) {
    // Room around the points, so those at the extremes are not cut in half by the frame.
    /** @type {uPlot.Range.Function} */
    const pad = (_u, min, max) => uPlot.rangeNum(min, max, 0.08, true);
    if (!this.options.scales.x.range && this.options.scales.x.distr !== 3) this.options.scales.x.range = pad;
    this.options.scales.y.range = pad;
    this.points = /** @type {Point[]} */ (points.filter((p) => p.y !== null && p.y !== undefined && p.x !== null && p.x !== undefined));
    const xs = this.points.map((p) => p.x);
    const ys = this.points.map((p) => p.y);
    // uPlot ranges the axes on this series; the points themselves are drawn in drawMarks.
    const data = /** @type {uPlot.AlignedData} */ (/** @type {unknown} */ ([null, [xs, ys]]));
    this.build([{ stroke: "transparent", paths: () => null, points: { show: false } }], data);
    this.container.dataset.seriesCount = String(this.points.length);
  }

  /** @param {number} index */
  keyOf(index) {
    return this.points[index].key;
  }

  /** @param {number} cx @param {number} cy */
  nearest(cx, cy) {
    /** @type {Found | null} */
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

  /** @param {Found} found */
  describe(found) {
    const p = this.points[found.index];
    return `${p.label} · ${this.xName} ${this.describeX(p.x)} · ${this.yName} ${metric(p.y)}`;
  }

  /** @param {uPlot} u */
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

  /** @param {CanvasRenderingContext2D} ctx */
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
