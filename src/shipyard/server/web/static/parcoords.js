// @ts-check
// Parallel coordinates on a canvas: one vertical axis per hyperparameter and the metric last
// (better at the top), one line per trial coloured by its rank. Hovering a line shows the
// trial; a click opens it.

import { h } from "./dom.js";
import { hparam, metric as formatMetric } from "./format.js";
import { cssVar } from "./theme.js";

/** @typedef {import("./hparam_axis.js").HparamAxis} HparamAxis */
/** @typedef {string | number} Key */
/** @typedef {{key: Key, label: string, values: unknown[], color: string}} Row */

const MARGIN = { top: 34, bottom: 28, left: 70, right: 90 };
const HOVER_PX = 6;

export class ParallelCoordinates {
  // axes: the last one the metric; a row's values: one an axis.
  /**
   * @param {HTMLElement} container
   * @param {{axes: HparamAxis[], rows: Row[], height?: number, onHover?: (key: Key | null) => void,
   *          onClick?: (key: Key) => void, invertLast?: boolean}} options
   */
  constructor(container, { axes, rows, height = 320, onHover, onClick, invertLast }) {
    this.container = container;
    this.axes = axes;
    this.rows = rows;
    this.height = height;
    this.onHover = onHover;
    this.onClick = onClick;
    this.invertLast = invertLast; // smaller is better: the smallest metric at the top
    this.width = 0; // css px, measured on each draw
    /** @type {Key | null} */
    this.highlighted = null;
    /** @type {Key | null} */
    this.hovered = null; // the key of the line under the pointer
    this.canvas = h("canvas", { class: "parcoords-canvas" });
    // The highlighted line on a canvas of its own: hovering never redraws every line.
    this.layer = h("canvas", { class: "chart-layer", "aria-hidden": "true" });
    this.tooltip = h("div", { class: "chart-tooltip", hidden: true });
    container.replaceChildren(this.canvas, this.layer, this.tooltip);
    container.classList.add("chart");
    container.setAttribute("role", "img");
    container.setAttribute("aria-label", `Parallel coordinates: ${axes.map((a) => a.name).join(", ")}; one line per trial`);
    container.dataset.seriesCount = String(rows.length);
    this.canvas.addEventListener("mousemove", (event) => this.pointer(event));
    this.canvas.addEventListener("mouseleave", () => this.setHovered(null));
    this.canvas.addEventListener("click", () => {
      if (this.hovered !== null) this.onClick?.(this.hovered);
    });
    this.resize = new ResizeObserver(() => this.draw());
    this.resize.observe(container);
  }

  /** @param {number} i */
  axisX(i) {
    const width = this.width - MARGIN.left - MARGIN.right;
    return MARGIN.left + (this.axes.length === 1 ? width / 2 : (i * width) / (this.axes.length - 1));
  }

  // Screen y of a value on axis i (null: missing).
  /** @param {number} i @param {unknown} value */
  axisY(i, value) {
    const at = this.axes[i].position(value);
    return at === null ? null : this.positionY(i, at);
  }

  // Screen y of a position (0..1) on axis i: the last one upside down when smaller is better.
  /** @param {number} i @param {number} at */
  positionY(i, at) {
    const up = i === this.axes.length - 1 && this.invertLast ? 1 - at : at;
    return MARGIN.top + (1 - up) * (this.height - MARGIN.top - MARGIN.bottom);
  }

  /** @param {HTMLCanvasElement} canvas */
  context(canvas) {
    const ratio = devicePixelRatio;
    canvas.width = this.width * ratio;
    canvas.height = this.height * ratio;
    canvas.style.width = `${this.width}px`;
    canvas.style.height = `${this.height}px`;
    const ctx = /** @type {CanvasRenderingContext2D} */ (canvas.getContext("2d"));
    ctx.setTransform(ratio, 0, 0, ratio, 0, 0);
    ctx.clearRect(0, 0, this.width, this.height);
    return ctx;
  }

  draw() {
    this.width = Math.max(300, this.container.clientWidth);
    const ctx = this.context(this.canvas);
    ctx.lineWidth = 1;
    for (const row of this.rows) this.line(ctx, row, row.color);
    this.drawAxes(ctx);
    this.drawLayer();
  }

  drawLayer() {
    const ctx = this.context(this.layer);
    const top = this.rows.find((r) => r.key === this.highlighted);
    if (!top) return;
    ctx.lineWidth = 3;
    this.line(ctx, top, cssVar("--accent"));
  }

  /** @param {CanvasRenderingContext2D} ctx @param {Row} row @param {string} color */
  line(ctx, row, color) {
    ctx.strokeStyle = color;
    ctx.beginPath();
    let drawing = false;
    row.values.forEach((value, i) => {
      const y = this.axisY(i, value);
      if (y === null) {
        drawing = false;
        return;
      }
      if (drawing) ctx.lineTo(this.axisX(i), y);
      else ctx.moveTo(this.axisX(i), y);
      drawing = true;
    });
    ctx.stroke();
  }

  /** @param {CanvasRenderingContext2D} ctx */
  drawAxes(ctx) {
    const text = cssVar("--text");
    const muted = cssVar("--text-muted");
    ctx.font = "12px system-ui, sans-serif";
    this.axes.forEach((axis, i) => {
      const x = this.axisX(i);
      ctx.strokeStyle = muted;
      ctx.lineWidth = 1;
      ctx.beginPath();
      ctx.moveTo(x, MARGIN.top);
      ctx.lineTo(x, this.height - MARGIN.bottom);
      ctx.stroke();
      ctx.fillStyle = text;
      ctx.textAlign = "center";
      ctx.fillText(axis.name + (axis.log ? " (log)" : ""), x, MARGIN.top - 16);
      ctx.fillStyle = muted;
      const ticks = axis.numeric ? axis.ticks(3) : axis.ticks();
      const every = Math.max(1, Math.ceil(ticks.length / 8)); // at most 8 category labels
      ticks.forEach((tick, t) => {
        if (t % every) return;
        const y = this.positionY(i, tick.at);
        const last = i === this.axes.length - 1; // its labels go right, out of the lines' way
        ctx.textAlign = last ? "left" : "right";
        ctx.fillText(tick.label.length > 12 ? tick.label.slice(0, 11) + "…" : tick.label, last ? x + 5 : x - 5, y + 4);
      });
    });
  }

  /** @param {MouseEvent} event */
  pointer(event) {
    const rect = this.canvas.getBoundingClientRect();
    const cx = event.clientX - rect.left;
    const cy = event.clientY - rect.top;
    let segment = 0;
    while (segment < this.axes.length - 2 && cx > this.axisX(segment + 1)) segment += 1;
    const x0 = this.axisX(segment);
    const x1 = this.axisX(Math.min(segment + 1, this.axes.length - 1));
    const f = x1 === x0 ? 0 : Math.max(0, Math.min(1, (cx - x0) / (x1 - x0)));
    /** @type {Row | null} */
    let best = null;
    let bestDistance = HOVER_PX;
    for (const row of this.rows) {
      const y0 = this.axisY(segment, row.values[segment]);
      const y1 = this.axisY(Math.min(segment + 1, this.axes.length - 1), row.values[Math.min(segment + 1, this.axes.length - 1)]);
      if (y0 === null || y1 === null) continue;
      const distance = Math.abs(y0 + f * (y1 - y0) - cy);
      if (distance < bestDistance) {
        bestDistance = distance;
        best = row;
      }
    }
    this.setHovered(best ? best.key : null, best, cx, cy);
  }

  /**
   * @param {Key | null} key
   * @param {Row | null} [row]
   * @param {number} [cx]
   * @param {number} [cy]
   */
  setHovered(key, row, cx = 0, cy = 0) {
    this.hovered = key;
    if (row) {
      this.tooltip.hidden = false;
      this.tooltip.textContent = `${row.label} · ` + this.axes.map((a, i) => `${a.name} ${i === this.axes.length - 1 ? formatMetric(row.values[i]) : hparam(row.values[i])}`).join(" · ");
      this.tooltip.style.left = `${Math.min(cx + 12, this.width - 320)}px`;
      this.tooltip.style.top = `${Math.max(0, cy - 34)}px`;
    } else {
      this.tooltip.hidden = true;
    }
    if (key !== this.highlighted) {
      this.highlighted = key;
      this.drawLayer();
      this.onHover?.(key);
    }
  }

  /** @param {Key | null} key */
  highlight(key) {
    if (this.hovered !== null) return;
    if (key === this.highlighted) return;
    this.highlighted = key;
    this.drawLayer();
  }

  destroy() {
    this.resize.disconnect();
  }
}
