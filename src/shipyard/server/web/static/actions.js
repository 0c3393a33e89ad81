// @ts-check
// Pause, activate, kill, archive: the buttons an experiment shows in its state.

import { api } from "./api.js";
import { h } from "./dom.js";

const TERMINAL = new Set(["COMPLETED", "CANCELED", "ERRORED"]);

/** @param {string} state */
export function isTerminal(state) {
  return TERMINAL.has(state);
}

/** @typedef {import("./api.js").ExperimentAction} ExperimentAction */
/** @typedef {{id: number, name: string, state: string, archived?: boolean}} ExperimentRef */

/**
 * @param {ExperimentRef} exp
 * @returns {ExperimentAction[]}
 */
function actionsFor(exp) {
  if (exp.archived) return ["unarchive"];
  if (exp.state === "ACTIVE") return ["pause", "kill"];
  if (exp.state === "PAUSED") return ["activate", "kill"];
  if (isTerminal(exp.state)) return ["archive"];
  return [];
}

/** @type {Record<ExperimentAction, [string, string]>} */
const LABELS = {
  pause: ["Pause", "Running trials checkpoint and stop; activate resumes them"],
  activate: ["Activate", "Resume the experiment's trials"],
  kill: ["Kill", "Cancel the experiment: its running trials are terminated"],
  archive: ["Archive", "Hide it from the experiments list (its data is kept)"],
  unarchive: ["Unarchive", "Show it in the experiments list again"],
};

// onDone(action, result) after the master accepted it; onError(error) otherwise.
/**
 * @param {ExperimentRef} exp
 * @param {{onDone?: (action: ExperimentAction, result: unknown) => void,
 *          onError?: (error: unknown) => void, small?: boolean}} [options]
 */
export function experimentActions(exp, { onDone, onError, small = false } = {}) {
  return h(
    "span",
    { class: "actions" },
    actionsFor(exp).map((action) => {
      const [text, title] = LABELS[action];
      const button = h(
        "button",
        {
          type: "button",
          class: `button${small ? " small" : ""}${action === "kill" ? " danger" : ""}`,
          title,
          "aria-label": `${text} experiment ${exp.id}`,
          dataset: { action },
        },
        text,
      );
      button.addEventListener("click", async () => {
        if (action === "kill" && !window.confirm(`Kill experiment ${exp.id} (${exp.name})? Its running trials are terminated.`)) return;
        button.disabled = true;
        try {
          const result = await api.experimentAction(exp.id, action);
          onDone?.(action, result);
        } catch (error) {
          button.disabled = false;
          onError?.(error);
        }
      });
      return button;
    }),
  );
}
