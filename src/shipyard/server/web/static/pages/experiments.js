// @ts-check
// The experiments page (/): every experiment in a sortable, filterable table, with its
// actions. Filters live in the query string: state, q, label, sort, archived.

import { api } from "../api.js";
import { experimentActions } from "../actions.js";
import { h, replace, stateBadge, progressBar, emptyState, errorBox, labeled, select, loading } from "../dom.js";
import * as fmt from "../format.js";
import { Poller } from "../poll.js";
import { query, updateQuery } from "../router.js";
import { DataTable } from "../table.js";

const STATES = ["ACTIVE", "PAUSED", "COMPLETED", "CANCELED", "ERRORED"];
const SUBMIT = "shipyard experiment create config.yaml .";

function running(exp) {
  const states = exp.trial_states || {};
  return (states.RUNNING || 0) + (states.STARTING || 0);
}

function matches(exp, text) {
  if (!text) return true;
  const needle = text.toLowerCase();
  return [String(exp.id), exp.name, exp.description, exp.searcher, exp.workspace, exp.owner, ...(exp.labels || [])]
    .some((field) => (field || "").toLowerCase().includes(needle));
}

export function mount(root) {
  document.title = "Experiments · Shipyard";
  const params = query();
  const filters = {
    state: params.get("state") || "",
    q: params.get("q") || "",
    label: params.get("label") || "",
    user: params.get("user") || "",
    archived: params.get("archived") || "false",
  };
  let experiments = null;
  let message = null;

  const onError = (error) => replace(message, errorBox(error));
  const table = new DataTable({
    caption: "Experiments",
    sort: params.get("sort") || "-id",
    onSort: (sort) => updateQuery({ sort: sort === "-id" ? null : sort }),
    rowKey: (e) => e.id,
    rowLink: true,
    empty: () => emptyFiltered(),
    columns: [
      { key: "id", title: "ID", numeric: true, render: (e) => h("a", { href: `/experiments/${e.id}` }, String(e.id)) },
      { key: "state", title: "State", render: (e) => [stateBadge(e.state), e.archived ? h("span", { class: "chip" }, "archived") : null] },
      {
        key: "name",
        title: "Name",
        render: (e) => h("a", { href: `/experiments/${e.id}`, title: e.description || null }, e.name),
      },
      {
        key: "labels",
        title: "Labels",
        value: (e) => (e.labels || []).join(","),
        render: (e) => (e.labels || []).map((label) =>
          h("button", { type: "button", class: "chip", title: `Show experiments labelled ${label}`, onclick: () => setFilter("label", label) }, label)),
      },
      {
        key: "owner",
        title: "User",
        headerTitle: "Who submitted it: the login name the CLI or SDK sent",
        render: (e) =>
          e.owner
            ? h("button", { type: "button", class: "chip", title: `Show experiments of ${e.owner}`, onclick: () => setFilter("user", e.owner) }, e.owner)
            : h("span", { class: "muted" }, "—"),
      },
      { key: "workspace", title: "Workspace" },
      { key: "searcher", title: "Searcher" },
      {
        key: "best_validation",
        title: "Best metric",
        numeric: true,
        render: (e) =>
          e.best_validation === null || e.best_validation === undefined
            ? h("span", { class: "muted" }, "—")
            : h("span", { title: `${e.metric} (${e.smaller_is_better ? "smaller" : "larger"} is better), trial ${e.best_trial_id}` },
                h("span", { class: "muted cell-note" }, e.metric), fmt.metric(e.best_validation)),
      },
      { key: "progress", title: "Progress", render: (e) => [progressBar(e.progress, `experiment ${e.id} progress`), " ", h("span", { class: "muted" }, fmt.percent(e.progress))] },
      {
        key: "num_trials",
        title: "Trials",
        headerTitle: "running / total",
        numeric: true,
        render: (e) => `${running(e)} / ${e.num_trials}`,
      },
      {
        key: "duration",
        title: "Duration",
        numeric: true,
        value: (e) => fmt.durationSeconds(e.created_at, e.ended_at),
        render: (e) => h("span", { title: `created ${fmt.time(e.created_at)}` }, fmt.duration(e.created_at, e.ended_at)),
      },
      {
        key: "actions",
        title: "Actions",
        sortable: false,
        render: (e) => experimentActions(e, { small: true, onDone: () => poller.kick(), onError }),
      },
    ],
  });

  const search = h("input", { type: "search", value: filters.q, placeholder: "name, id, label, searcher…", oninput: () => setFilter("q", search.value) });
  /** @type {[string, string][]} */
  const stateOptions = [["", "all"], ...STATES.map((s) => /** @type {[string, string]} */ ([s, s.toLowerCase()]))];
  const stateSelect = select(stateOptions, filters.state, { onchange: () => setFilter("state", stateSelect.value, true) });
  const labelSelect = select([["", "all"]], filters.label, { onchange: () => setFilter("label", labelSelect.value) });
  const userSelect = select([["", "all"]], filters.user, { onchange: () => setFilter("user", userSelect.value) });
  const archivedSelect = select([["false", "hidden"], ["true", "only archived"], ["all", "shown"]], filters.archived, {
    onchange: () => setFilter("archived", archivedSelect.value, true),
  });
  const clearButton = h("button", { type: "button", class: "button small", onclick: () => clearFilters() }, "Clear filters");
  message = h("div");
  const body = h("div", null, loading("experiments"));

  replace(
    root,
    h("div", { class: "page-header" }, h("h1", null, "Experiments")),
    h(
      "div",
      { class: "toolbar", role: "search", "aria-label": "Filter experiments" },
      labeled("Search", search),
      labeled("State", stateSelect),
      labeled("Label", labelSelect),
      labeled("User", userSelect),
      labeled("Archived", archivedSelect),
      clearButton,
    ),
    message,
    body,
  );

  function setFilter(key, value, refetch = false) {
    filters[key] = value;
    updateQuery({ [key]: key === "archived" && value === "false" ? null : value });
    if (key === "label") labelSelect.value = value;
    if (key === "user") userSelect.value = value;
    if (refetch) poller.kick(); // its answer shows
    else show();
  }

  function clearFilters() {
    const refetch = filters.state || filters.archived !== "false";
    Object.assign(filters, { state: "", q: "", label: "", user: "", archived: "false" });
    search.value = "";
    stateSelect.value = "";
    labelSelect.value = "";
    userSelect.value = "";
    archivedSelect.value = "false";
    updateQuery({ state: null, q: null, label: null, user: null, archived: null });
    if (refetch) poller.kick();
    else show();
  }

  function emptyFiltered() {
    return h("span", null, "No experiment matches these filters. ", h("button", { type: "button", class: "button small", onclick: clearFilters }, "Clear filters"));
  }

  // A select's options: "all" and every value the experiments have (and the chosen one).
  function updateChoices(selectElement, values, chosen) {
    const choices = [...new Set(values)].sort();
    if (chosen && !choices.includes(chosen)) choices.unshift(chosen);
    replace(selectElement, h("option", { value: "" }, "all"), choices.map((v) => h("option", { value: v, selected: v === chosen }, v)));
  }

  function updateLabels() {
    updateChoices(labelSelect, experiments.flatMap((e) => e.labels || []), filters.label);
    updateChoices(userSelect, experiments.map((e) => e.owner).filter(Boolean), filters.user);
  }

  function show() {
    if (!experiments) return;
    // state and archived are the master's filters (refresh asks for them), these three ours.
    const filtered = experiments.filter(
      (e) => matches(e, filters.q) && (!filters.label || (e.labels || []).includes(filters.label)) && (!filters.user || e.owner === filters.user),
    );
    const unfiltered = !filters.q && !filters.label && !filters.user && !filters.state && filters.archived === "false";
    if (!experiments.length && unfiltered) {
      replace(body, emptyState("No experiments yet", "Submit one from a directory with your training code and its config:", SUBMIT));
      return;
    }
    if (!body.contains(table.element)) replace(body, table.element);
    table.setRows(filtered);
  }

  let lastText = null;
  async function refresh(signal) {
    const query = { archived: filters.archived, state: filters.state || null };
    const list = await api.experiments(query, signal);
    const text = JSON.stringify([query, list]); // new filters show even if the list is the same
    const changed = text !== lastText;
    lastText = text;
    experiments = list;
    if (changed) {
      updateLabels();
      show();
    }
    return changed;
  }

  const poller = new Poller(refresh, {
    min: 2000,
    max: 15000,
    onError: (error) => {
      if (!experiments) replace(body, errorBox(error)); // later, the live status says it
    },
  }).start(0);
  return () => poller.stop();
}
