// @ts-check
// The cluster page (/cluster): resource pools, every slot and who holds it, the job queue in
// the order the scheduler takes it with why each trial waits, and recent failures.

import { api } from "../api.js";
import { h, replace, stateBadge, progressBar, errorBox, loading, emptyState, simpleTable } from "../dom.js";
import * as fmt from "../format.js";
import { Poller } from "../poll.js";

const FAILURES = 20; // the most recent shown

function poolCard(pool) {
  return h("section", { class: "card", "aria-label": `Pool ${pool.name}` },
    h("h3", null, pool.name, " ", pool.default ? h("span", { class: "chip" }, "default") : null, " ",
      pool.healthy ? h("span", { class: "badge tone-good" }, "healthy") : h("span", { class: "badge tone-bad" }, "down")),
    pool.description ? h("p", { class: "muted" }, pool.description) : null,
    h("p", null, progressBar(pool.slots_total ? pool.slots_used / pool.slots_total : 0, `slots used in pool ${pool.name}`),
      ` ${pool.slots_used} of ${pool.slots_total} slots used`),
    h("p", { class: "muted" }, `${pool.type} backend · ${pool.scheduler} scheduler · preemption ${pool.preemption ? "on" : "off"}`),
    pool.problem ? h("p", { class: "bad" }, pool.problem) : null);
}

function trialLink(trialId, experimentId, names, busy) {
  if (!trialId) return h("span", { class: "muted" }, busy ? "another workspace" : "free");
  return h("span", null, h("a", { href: `/trials/${trialId}` }, `trial ${trialId}`), " of ",
    h("a", { href: `/experiments/${experimentId}` }, names.get(experimentId) || `experiment ${experimentId}`));
}

function slotsSection(slots, names) {
  if (!slots.length) return emptyState("No slots", "The master found no GPU and was given no CPU slots; start it with --slots N.");
  return simpleTable("Slots", ["Slot", "Kind", "Device", "Pool", "Held by"], slots.map((s) => [
    h("code", null, s.id), s.kind, s.device, s.pool || h("span", { class: "muted" }, "in no pool"), trialLink(s.trial_id, s.experiment_id, names, s.busy),
  ]), { wrap: [4] });
}

function queueSection(jobs) {
  if (!jobs.length) return emptyState("Nothing running or waiting", "Trials appear here while they run or wait for slots.", "shipyard experiment create config.yaml .");
  return simpleTable("Job queue in scheduling order", ["#", "State", "Trial", "Experiment", "Pool", "Priority", "Weight", "Slots", "Why (or where) it runs or waits"], jobs.map((j) => [
    String(j.position), stateBadge(j.state), h("a", { href: `/trials/${j.trial_id}` }, String(j.trial_id)),
    h("a", { href: `/experiments/${j.experiment_id}` }, `${j.experiment_name} (${j.experiment_id})`),
    j.resource_pool, String(j.priority), String(j.weight), j.slots.length ? j.slots.join(", ") : `needs ${j.slots_needed}`, h("span", { class: "reason" }, j.reason),
  ]), { numeric: [0, 5, 6], wrap: [8] });
}

function failuresSection(failures) {
  if (!failures.length) return h("p", { class: "muted" }, "No trial has failed or restarted.");
  return simpleTable("Recent failures", ["Trial", "Experiment", "State", "Restarts", "Ended", "Why"], failures.map((trial) => [
    h("a", { href: `/trials/${trial.id}?tab=logs` }, String(trial.id)),
    h("a", { href: `/experiments/${trial.experiment_id}` }, `${trial.experiment_name} (${trial.experiment_id})`),
    stateBadge(trial.state), String(trial.restarts), fmt.time(trial.ended_at), h("span", { class: "reason" }, trial.end_reason || "—"),
  ]), { numeric: [0, 3], wrap: [5] });
}

// Errored trials and trials that restarted after a failure, of every experiment: live ones
// first, then the latest to end, as the master orders each list.
async function recentFailures(signal) {
  const lists = await Promise.all([
    api.trials({ state: "ERRORED", limit: FAILURES }, signal),
    api.trials({ restarted: true, limit: FAILURES }, signal),
  ]);
  const byId = new Map(lists.flat().map((trial) => [trial.id, trial]));
  const latestFirst = (a, b) => String(b.ended_at || "~").localeCompare(String(a.ended_at || "~")) || b.id - a.id;
  return [...byId.values()].sort(latestFirst).slice(0, FAILURES);
}

export function mount(root) {
  document.title = "Cluster · Shipyard";
  const poolsBox = h("div", { class: "cards" }, loading("pools"));
  const slotsBox = h("div");
  const queueBox = h("div");
  const failuresBox = h("div", null, loading("recent failures"));
  replace(
    root,
    h("div", { class: "page-header" }, h("h1", null, "Cluster")),
    h("h2", null, "Resource pools"), poolsBox,
    h("h2", { style: { marginTop: "20px" } }, "Job queue"),
    h("p", { class: "muted" }, "Running trials first, then the queue in the order the scheduler takes it, each with the reason it waits."),
    queueBox,
    h("h2", { style: { marginTop: "20px" } }, "Slots"), slotsBox,
    h("h2", { style: { marginTop: "20px" } }, "Recent failures"), failuresBox,
  );

  let lastText = null;
  async function refresh(signal) {
    const [pools, slots, jobs] = await Promise.all([api.pools(signal), api.slots(signal), api.jobs(signal)]);
    const text = JSON.stringify([pools, slots, jobs]);
    if (text === lastText) return false;
    lastText = text;
    const names = new Map(jobs.map((j) => [j.experiment_id, `${j.experiment_name} (${j.experiment_id})`]));
    replace(poolsBox, pools.length ? pools.map(poolCard) : h("p", { class: "muted" }, "No resource pools."));
    replace(slotsBox, slotsSection(slots, names));
    replace(queueBox, queueSection(jobs));
    return true;
  }

  // Failures change seldom: a poller of their own, slower, whose failure is this section's,
  // not the page's.
  let failuresText = null;
  async function refreshFailures(signal) {
    const failures = await recentFailures(signal);
    const text = JSON.stringify(failures);
    if (text === failuresText) return false;
    failuresText = text;
    replace(failuresBox, failuresSection(failures));
    return true;
  }

  const pollers = [
    new Poller(refresh, {
      min: 2000,
      max: 15000,
      onError: (error) => {
        if (lastText === null) replace(poolsBox, errorBox(error));
      },
    }),
    new Poller(refreshFailures, {
      min: 10000,
      max: 60000,
      status: false,
      onError: (error) => {
        failuresText = null; // the next answer replaces the error
        replace(failuresBox, errorBox(error));
      },
    }),
  ];
  pollers.forEach((poller) => poller.start(0));
  return () => pollers.forEach((poller) => poller.stop());
}
