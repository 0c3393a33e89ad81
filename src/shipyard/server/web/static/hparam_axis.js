// @ts-check
// One hyperparameter (or the metric) as an axis: numbers on a linear or log scale, anything
// else as evenly spaced categories. Positions are fractions 0..1 of the axis.

import { hparam, short } from "./format.js";

export class HparamAxis {
  // config: the hyperparameter's config entry (type "log" makes a log scale).
  /**
   * @param {string} name
   * @param {unknown[]} values
   * @param {{type?: string} | null | undefined} config
   */
  constructor(name, values, config) {
    this.name = name;
    const present = values.filter((v) => v !== null && v !== undefined);
    this.numeric = present.length > 0 && present.every((v) => typeof v === "number");
    this.log = false;
    this.min = 0;
    this.max = 1;
    /** @type {string[]} the values in order, when not numeric */
    this.categories = [];
    if (this.numeric) {
      const numbers = /** @type {number[]} */ (present);
      this.log = config?.type === "log" && numbers.every((v) => v > 0);
      const t = numbers.map((v) => this.transform(v));
      this.min = Math.min(...t);
      this.max = Math.max(...t);
      if (this.min === this.max) {
        this.min -= 0.5;
        this.max += 0.5;
      }
    } else {
      this.categories = [...new Set(present.map((v) => hparam(v)))].sort((a, b) => a.localeCompare(b, "en", { numeric: true }));
    }
  }

  /** @param {number} value */
  transform(value) {
    return this.log ? Math.log10(value) : value;
  }

  // 0..1 along the axis, or null for a missing value.
  /** @param {unknown} value */
  position(value) {
    if (value === null || value === undefined) return null;
    if (this.numeric) return (this.transform(/** @type {number} */ (value)) - this.min) / (this.max - this.min);
    const index = this.categories.indexOf(hparam(value));
    if (index < 0) return null;
    return this.categories.length === 1 ? 0.5 : index / (this.categories.length - 1);
  }

  // A few labelled positions.
  /**
   * @param {number} [count]
   * @returns {{at: number, label: string}[]}
   */
  ticks(count = 5) {
    if (!this.numeric) {
      const last = this.categories.length - 1;
      return this.categories.map((label, i) => ({ at: last ? i / last : 0.5, label }));
    }
    const out = [];
    for (let i = 0; i < count; i++) {
      const at = i / (count - 1);
      out.push({ at, label: short(this.valueAt(at)) });
    }
    return out;
  }

  /** @param {number} at 0..1 */
  valueAt(at) {
    const t = this.min + at * (this.max - this.min);
    return this.log ? 10 ** t : t;
  }

  // Bins for a heat map: [{low, high, label}] and the bin of a value.
  /**
   * @param {number} [maxBins]
   * @returns {{low?: number, high?: number, label: string}[]}
   */
  bins(maxBins = 8) {
    if (!this.numeric) return this.categories.map((c) => ({ label: c }));
    return Array.from({ length: maxBins }, (_, i) => {
      const low = this.valueAt(i / maxBins);
      const high = this.valueAt((i + 1) / maxBins);
      return { low, high, label: `${short(low)}–${short(high)}` };
    });
  }

  /**
   * @param {unknown} value
   * @param {number} binCount
   */
  binOf(value, binCount) {
    const at = this.position(value);
    if (at === null) return null;
    if (!this.numeric) return this.categories.indexOf(hparam(value));
    return Math.min(binCount - 1, Math.floor(at * binCount));
  }
}
