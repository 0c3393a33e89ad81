// @ts-check
// What a trial left behind: its checkpoints (with downloads), its runs (each launch, and
// why it ended: the restarts' reasons) and what each run ran (trial_environment.js).

import { api } from "../api.js";
import { h, replace, errorBox, loading, emptyState, copyButton, simpleTable } from "../dom.js";
import * as fmt from "../format.js";

// The environment tab has a module of its own; the trial page finds every tab here.
export { createEnvironmentTab } from "./trial_environment.js";

export function createCheckpointsTab(panel, page) {
  let shown = null;
  async function load(signal) {
    shown = page.trial.latest_checkpoint;
    const checkpoints = await api.trialCheckpoints(page.trial.id, signal);
    if (!checkpoints.length) {
      replace(panel, emptyState("No checkpoints", "Training code saves one with ctx.checkpoint.store_path(metadata); a trial resumes from its latest after a restart or a pause."));
      return;
    }
    checkpoints.reverse(); // the master lists them by step; the latest first here
    const metricName = page.trial.searcher_metric || "metric";
    replace(panel, simpleTable(
      `Checkpoints of trial ${page.trial.id}`,
      ["UUID", "Step", "Run", "Size", metricName, "Metadata", "Created", "State", ""],
      checkpoints.map((c) => [
        h("span", null, h("code", null, c.uuid.slice(0, 8)), " ", copyButton(c.uuid, "Copy UUID")),
        fmt.integer(c.steps_completed),
        String(c.run_id),
        fmt.bytes(c.size),
        fmt.metric(c.validation),
        h("code", { class: "muted" }, Object.keys(c.metadata || {}).length ? JSON.stringify(c.metadata) : "—"),
        fmt.time(c.created_at),
        c.uuid === page.trial.latest_checkpoint ? h("span", null, c.state.toLowerCase(), h("span", { class: "chip" }, "latest")) : c.state.toLowerCase(),
        c.state === "COMPLETED"
          ? h("a", { class: "button small", href: api.checkpointDownloadUrl(c.uuid), download: `checkpoint-${c.uuid}.tar`, "aria-label": `Download checkpoint ${c.uuid} (tar)` }, "Download")
          : h("span", { class: "muted" }, "deleted"),
      ]),
      { numeric: [1, 2, 3, 4] },
    ), h("p", { class: "muted" }, "A download is a tar of the checkpoint's files; ", h("code", null, "shipyard checkpoint download UUID"), " does the same from a terminal."));
  }
  replace(panel, loading("checkpoints"));
  load().catch((error) => replace(panel, errorBox(error)));
  return {
    async update(trial, signal) {
      if (trial.latest_checkpoint !== shown) await load(signal);
    },
  };
}

export function createRunsTab(panel, page) {
  function render() {
    const trial = page.trial;
    const runs = trial.runs || [];
    replace(
      panel,
      runs.length
        ? simpleTable(
            `Runs of trial ${trial.id}`,
            ["Run", "Slots", "Started", "Ended", "Duration", "How it ended"],
            runs.map((r) => [String(r.run_id), (r.slots || []).join(", ") || "—", fmt.time(r.started_at), r.ended_at ? fmt.time(r.ended_at) : "running",
              fmt.duration(r.started_at, r.ended_at), r.ended_how || (r.ended_at ? "—" : "running")]),
            { numeric: [0], wrap: [5] },
          )
        : emptyState("Not launched yet", trial.end_reason || "The trial runs once the scheduler gives it slots; the cluster page says why it waits."),
      trial.exit_reason ? h("div", { class: "card" }, h("h3", null, "Exit reason"), h("p", { class: trial.state === "ERRORED" ? "bad" : null }, trial.exit_reason)) : null,
      trial.last_log_lines?.length
        ? h("div", { class: "card" }, h("h3", null, "Its last lines before the end"), h("pre", { class: "code-block" }, trial.last_log_lines.join("\n")))
        : null,
    );
  }
  render();
  return { update: render };
}
