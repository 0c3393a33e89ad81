// @ts-check
// How learning curves are drawn, as the user picks it and the query string keeps it: a log
// y scale (log=1) and TensorBoard's smoothing (smooth, 0 to 0.95). The experiment's curves
// and a trial's metric charts share these controls.

import { h, labeled } from "./dom.js";
import { query, updateQuery } from "./router.js";
import { smooth } from "./series.js";

// onChange(key) after the user changed "log" or "smooth". A chart's y scale kind is fixed
// when it is made: on "log" the page makes its charts again.
/** @param {(key: "log" | "smooth") => void} onChange */
export function curveOptions(onChange) {
  const params = query();
  const state = {
    log: params.get("log") === "1",
    smooth: Math.min(0.95, Math.max(0, Number(params.get("smooth")) || 0)),
  };
  const logBox = h("input", { type: "checkbox", checked: state.log, onchange: () => set("log", logBox.checked) });
  const smoothRange = h("input", { type: "range", min: "0", max: "0.95", step: "0.05", value: String(state.smooth),
    oninput: () => set("smooth", Number(smoothRange.value)) });
  const smoothValue = h("output", null, state.smooth.toFixed(2));

  /**
   * @param {"log" | "smooth"} key
   * @param {boolean | number} value
   */
  function set(key, value) {
    if (key === "log") state.log = Boolean(value);
    else state.smooth = Number(value);
    if (key === "smooth") smoothValue.textContent = Number(value).toFixed(2);
    updateQuery({ log: state.log ? "1" : null, smooth: state.smooth ? String(state.smooth) : null });
    onChange(key);
  }

  return {
    get log() {
      return state.log;
    },
    // The values as drawn: smoothed as picked.
    /** @template {number | null} T @param {T[]} ys */
    values: (ys) => smooth(ys, state.smooth),
    controls: [labeled("Log scale", logBox), labeled("Smoothing", smoothRange, smoothValue)],
  };
}
