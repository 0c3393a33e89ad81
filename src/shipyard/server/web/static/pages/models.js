// @ts-check
// The model registry: every model (/models) and one model (/models/<name>, with
// ?workspace=W when its name is in several workspaces), whose versions link back to their
// trial, experiment and commit and show the trial's validation metrics at the checkpoint.

import { api, isAbort } from "../api.js";
import { h, replace, errorBox, loading, emptyState, simpleTable, facts } from "../dom.js";
import * as fmt from "../format.js";
import { query, updateQuery } from "../router.js";

const MOST_VERSIONS = 50; // the latest shown with their lineage (each is a request)

/** The model a /models/<name> path names (null: the list). @param {string} path */
export function modelName(path) {
  const match = path.match(/^\/models\/([^/]+)\/?$/);
  return match ? decodeURIComponent(match[1]) : null;
}

/**
 * A model's page: its name, and its workspace when the list shows several.
 * @param {{name: string, workspace: string}} model
 */
export function modelHref(model) {
  return `/models/${encodeURIComponent(model.name)}?workspace=${encodeURIComponent(model.workspace)}`;
}

/**
 * Where a commit can be seen: the remote's web page of it (GitHub, GitLab and the like
 * answer <remote>/commit/<sha>), when the remote is an https URL; else null.
 * @param {{commit?: string, remote?: string} | null | undefined} code
 */
export function commitUrl(code) {
  if (!code || !code.commit || !code.remote || !/^https:\/\/[^\s]+$/.test(code.remote)) return null;
  return `${code.remote.replace(/\.git$/, "").replace(/\/$/, "")}/commit/${code.commit}`;
}

/** "val_loss 0.25, accuracy 0.9" @param {Record<string, number | null>} metrics */
export function metricsText(metrics) {
  const names = Object.keys(metrics || {});
  if (!names.length) return "—";
  return names.map((name) => `${name} ${fmt.metric(metrics[name])}`).join(", ");
}

/** @param {any} code */
function commitCell(code) {
  if (!code || !code.commit) return h("span", { class: "muted", title: "not submitted from a git work tree" }, "no git");
  const text = h("code", { title: code.commit }, code.commit.slice(0, 12));
  const url = commitUrl(code);
  return h("span", null, url ? h("a", { href: url, target: "_blank", rel: "noopener noreferrer" }, text) : text,
    code.dirty ? h("span", { class: "chip", title: "uncommitted changes at submit" }, "dirty") : null);
}

/** @param {{alias: string, version: number}[]} aliases */
function aliasChips(aliases) {
  if (!aliases.length) return h("span", { class: "muted" }, "—");
  return aliases.map((a) => h("span", { class: "chip", title: `${a.alias} names version ${a.version}` }, `${a.alias} → ${a.version}`));
}

/** @param {any[]} models */
function listTable(models) {
  return simpleTable("Models", ["Name", "Workspace", "Versions", "Latest", "Aliases", "Tags", "Owner", "Created"], models.map((m) => [
    h("span", null, h("a", { href: modelHref(m) }, m.name), m.archived ? h("span", { class: "chip" }, "archived") : null),
    m.workspace, String(m.num_versions), m.latest_version === null ? "—" : String(m.latest_version),
    aliasChips(m.aliases), (m.tags || []).join(", ") || "—", m.owner || "—", fmt.time(m.created_at),
  ]), { numeric: [2, 3] });
}

/** @param {HTMLElement} root @param {AbortSignal} signal */
async function showList(root, signal) {
  const archived = query().get("archived") === "all";
  const box = h("div", null, loading("models"));
  const toggle = h("label", { class: "muted" },
    h("input", { type: "checkbox", checked: archived, onchange: () => {
      updateQuery({ archived: archived ? null : "all" });
      render(root, signal);
    } }), " Show archived");
  replace(root, h("div", { class: "page-header" }, h("h1", null, "Models"), toggle), box);
  const models = await api.models(archived ? {} : { archived: false }, signal);
  replace(box, models.length
    ? listTable(models)
    : emptyState("No models yet", "A model names checkpoints worth keeping: its versions are never deleted by retention.",
      "shipyard model create NAME"));
}

/** @param {any} model @param {any[]} details */
function versionsTable(model, details) {
  return simpleTable(`Versions of ${model.name}`,
    ["Version", "Aliases", "Trial", "Experiment", "Step", "Commit", "Validation metrics", "Registered", "Description"],
    details.map((v) => [
      h("strong", null, String(v.version)),
      v.aliases.length ? v.aliases.map((a) => h("span", { class: "chip" }, a)) : "—",
      h("a", { href: `/trials/${v.trial_id}` }, `trial ${v.trial_id}`),
      h("a", { href: `/experiments/${v.experiment_id}` }, `${v.lineage.experiment_name} (${v.experiment_id})`),
      String(v.steps_completed),
      commitCell(v.lineage.code),
      metricsText(v.lineage.validation_metrics),
      `${fmt.time(v.created_at)}${v.created_by ? ` by ${v.created_by}` : ""}`,
      v.description || "—",
    ]), { numeric: [0, 4], wrap: [6, 8] });
}

/** @param {HTMLElement} root @param {string} name @param {AbortSignal} signal */
async function showModel(root, name, signal) {
  document.title = `${name} · Models · Shipyard`;
  const workspace = query().get("workspace");
  const where = workspace ? { workspace } : {};
  replace(root, loading(`model ${name}`));
  const model = await api.model(name, where, signal);
  const shown = model.versions.slice(-MOST_VERSIONS).reverse();
  const scope = { workspace: model.workspace };
  const details = await Promise.all(shown.map((v) => api.modelVersion(name, v.version, scope, signal)));
  replace(root,
    h("div", { class: "breadcrumbs" }, h("a", { href: "/models" }, "Models"), ` / ${model.workspace} / ${model.name}`),
    h("div", { class: "page-header" }, h("h1", null, model.name),
      model.archived ? h("span", { class: "chip" }, "archived") : null,
      (model.tags || []).map((tag) => h("span", { class: "chip" }, tag))),
    model.description ? h("p", null, model.description) : null,
    facts([
      ["Workspace", model.workspace],
      ["Owner", model.owner || "—"],
      ["Created", fmt.time(model.created_at)],
      ["Versions", String(model.num_versions)],
      ["Aliases", aliasChips(model.aliases)],
      ["URI", model.aliases.length ? h("code", null, `shipyard://models/${model.name}@${model.aliases[0].alias}`) : null],
    ]),
    h("h2", null, "Versions"),
    details.length
      ? versionsTable(model, details)
      : emptyState("No version yet", "A version is a checkpoint, never changed once registered.",
        `shipyard model register ${model.name} CHECKPOINT_UUID`),
    model.versions.length > MOST_VERSIONS ? h("p", { class: "muted" }, `The latest ${MOST_VERSIONS} of ${model.versions.length} versions.`) : null);
}

/** @param {HTMLElement} root @param {AbortSignal} signal */
function render(root, signal) {
  const name = modelName(location.pathname);
  const shown = name === null ? showList(root, signal) : showModel(root, name, signal);
  shown.catch((error) => {
    if (!isAbort(error)) replace(root, errorBox(error));
  });
}

/** @param {HTMLElement} root */
export function mount(root) {
  document.title = "Models · Shipyard";
  const controller = new AbortController();
  render(root, controller.signal);
  return () => controller.abort();
}
