// @ts-check
// The trial page's Environment tab: what a run of the trial ran (GET /trials/{id}/environment).
// Its code (git at submit: commit, branch, uncommitted changes and their diff, unpushed
// commits), snapshot, seed and image; each rank's capture: Python, framework build, GPUs and
// driver, CPU, OS, packages (filterable), environment variables and the probes' errors; and
// the environment, resources and entrypoint the experiment asked for.

import { api, isAbort } from "../api.js";
import { h, replace, errorBox, loading, facts, copyButton, simpleTable, labeled, select } from "../dom.js";
import * as fmt from "../format.js";
import { toYaml } from "../yaml.js";

/** @typedef {{rank: number, record: any, received_at: string}} RankEnvironment */
/** @typedef {{run_id: number | null, code: any, context_id: string | null, hyperparameters: any, seed: number, image: any, ranks: RankEnvironment[]}} TrialEnvironment */

// A package name as pip compares them (PEP 503): case, "-", "_" and "." do not matter.
/** @param {string} name */
export function normalizePackage(name) {
  return name.toLowerCase().replace(/[-_.]+/g, "-");
}

// The packages as [name, version] rows by name, those whose name or version has `filter`.
/**
 * @param {Record<string, unknown> | null | undefined} packages
 * @param {string} [filter]
 * @returns {[string, string][]}
 */
export function packageRows(packages, filter = "") {
  const wanted = normalizePackage(filter.trim());
  return Object.entries(packages || {})
    .map(([name, version]) => /** @type {[string, string]} */ ([name, version === null || version === undefined ? "—" : String(version)]))
    .filter(([name, version]) => !wanted || normalizePackage(name).includes(wanted) || version.toLowerCase().includes(wanted))
    .sort((a, b) => a[0].localeCompare(b[0], "en", { sensitivity: "base" }));
}

// The environment variables the capture saw, by name: kept ones with their value, hashed
// ones and redacted ones (secrets) without.
/**
 * @param {{kept?: Record<string, string>, hashed?: Record<string, string>, redacted?: string[]} | null | undefined} env
 * @returns {{name: string, value: string, kind: "kept" | "hashed" | "redacted"}[]}
 */
export function envRows(env) {
  /** @type {{name: string, value: string, kind: "kept" | "hashed" | "redacted"}[]} */
  const rows = [];
  for (const [name, value] of Object.entries(env?.kept || {})) rows.push({ name, value: String(value), kind: "kept" });
  for (const name of Object.keys(env?.hashed || {})) rows.push({ name, value: "(hashed)", kind: "hashed" });
  for (const name of env?.redacted || []) rows.push({ name, value: "(redacted)", kind: "redacted" });
  return rows.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

// Where the uncommitted diff of the code is: in the record, in a blob of its own, or
// nowhere (too large: its hash and size only). "none": the work tree was clean.
/**
 * @param {any} code the experiment's git record
 * @returns {{kind: "none" | "inline" | "blob" | "not-stored" | "unknown", text: string}}
 */
export function diffNote(code) {
  if (!code?.dirty) return { kind: "none", text: "no uncommitted changes" };
  const files = code.changed_files;
  const size = code.diff_bytes === null || code.diff_bytes === undefined ? "" : `, ${fmt.bytes(code.diff_bytes)}`;
  const what = `${files === undefined || files === null ? "some" : fmt.integer(files)} file${files === 1 ? "" : "s"} changed${size}`;
  if (typeof code.diff === "string") return { kind: "inline", text: `The uncommitted changes (${what})` };
  if (code.diff_blob) return { kind: "blob", text: `The uncommitted diff (${what}) is stored as blob ${String(code.diff_blob).slice(0, 12)} beside the code snapshot.` };
  if (code.diff_stored === false) {
    const hash = code.diff_sha256 ? `: sha256 ${code.diff_sha256}` : "";
    return { kind: "not-stored", text: `The uncommitted diff (${what}) was too large to store; only its hash and size are recorded${hash}.` };
  }
  return { kind: "unknown", text: `Uncommitted changes (${what}); the diff itself was not recorded.` };
}

// GPUs alike counted once: "2 × NVIDIA A100 (40,960 MiB)".
/** @param {{name?: string, memory_mib?: number}[] | null | undefined} devices */
export function gpuSummary(devices) {
  /** @type {Map<string, number>} */
  const counts = new Map();
  for (const d of devices || []) {
    const text = d.memory_mib ? `${d.name || "GPU"} (${fmt.integer(d.memory_mib)} MiB)` : d.name || "GPU";
    counts.set(text, (counts.get(text) || 0) + 1);
  }
  return [...counts].map(([text, n]) => (n > 1 ? `${n} × ${text}` : text)).join("; ");
}

// The framework builds as facts: PyTorch's version and what it was built with, any other
// framework's fields as they are.
/**
 * @param {Record<string, any> | null | undefined} framework
 * @returns {[string, string][]}
 */
export function frameworkFacts(framework) {
  /** @type {[string, string][]} */
  const out = [];
  for (const [name, build] of Object.entries(framework || {})) {
    if (!build || typeof build !== "object") {
      out.push([name, fmt.hparam(build)]);
    } else if (name === "torch") {
      const labels = /** @type {[string, string][]} */ ([["version", "PyTorch"], ["cuda", "CUDA (build)"], ["cudnn", "cuDNN"], ["nccl", "NCCL"], ["cpu_capability", "CPU capability"]]);
      for (const [key, label] of labels) if (build[key] !== null && build[key] !== undefined) out.push([label, String(build[key])]);
      if (build.debug) out.push(["Debug build", "yes"]);
    } else {
      const parts = Object.entries(build).filter(([, v]) => v !== null && v !== undefined).map(([k, v]) => `${k} ${fmt.hparam(v)}`);
      out.push([name, parts.join(", ") || "—"]);
    }
  }
  return out;
}

// The ranks whose every section is the same as the first rank's (their hashes say so).
/** @param {RankEnvironment[]} ranks */
export function sameAsFirst(ranks) {
  const first = ranks[0]?.record?.hashes;
  const key = (/** @type {any} */ hashes) => JSON.stringify(Object.entries(hashes).sort());
  if (!first || !Object.keys(first).length) return new Set();
  return new Set(ranks.slice(1).filter((r) => r.record?.hashes && key(r.record.hashes) === key(first)).map((r) => r.rank));
}

/** @param {string} text @param {string} [title] the whole value, when the text is cut */
const mono = (text, title) => h("span", { class: "mono", title: title || null }, text);

/** @param {TrialEnvironment} env */
function codeCard(env) {
  const code = env.code;
  /** @type {HTMLElement[]} */
  const children = [h("h3", null, "Code")];
  if (!code) {
    children.push(h("p", { class: "muted" }, "The code was not submitted from a git work tree: its snapshot is what says what ran."));
  }
  const note = diffNote(code);
  const unpushed = code?.unpushed || [];
  children.push(facts([
    ["Commit", code?.commit ? h("span", null, mono(String(code.commit).slice(0, 12), code.commit), " ", copyButton(code.commit, "Copy")) : null],
    ["Branch", code?.branch ? mono(code.branch) : code ? "(detached)" : null],
    ["Remote", code?.remote ? mono(code.remote) : null],
    ["Directory", code?.subdirectory ? mono(code.subdirectory, code.root) : null],
    ["Uncommitted changes", code ? (code.dirty ? `${fmt.integer(code.changed_files ?? 0)} file${code.changed_files === 1 ? "" : "s"}` : "none") : null],
    ["Unpushed commits", code ? h("span", { title: unpushed.join("\n") || null }, `${unpushed.length}${code.unpushed_truncated ? " or more" : ""}`) : null],
    ["Snapshot", env.context_id ? h("span", null, mono(env.context_id.slice(0, 12), env.context_id), " ", copyButton(env.context_id, "Copy")) : null],
    ["Seed", String(env.seed)],
  ]));
  if (note.kind === "inline") {
    children.push(h("details", { class: "env-details" },
      h("summary", null, note.text),
      h("pre", { class: "code-block diff-block", tabindex: "0", "aria-label": "The uncommitted diff" }, code.diff)));
  } else if (note.kind !== "none") {
    children.push(h("p", { class: "muted" }, note.text));
  }
  return h("section", { class: "card", "aria-label": "Code" }, children);
}

/** @param {TrialEnvironment} env */
function imageCard(env) {
  const image = Object.entries(env.image || {}).filter(([, v]) => v !== null && v !== undefined && v !== "");
  return h("section", { class: "card", "aria-label": "Where it ran" },
    h("h3", null, "Where it ran"),
    image.length
      ? facts(image.map(([key, value]) => [key, mono(fmt.hparam(value))]))
      : h("p", { class: "muted" }, "The backend recorded nothing for this run."));
}

// A table with a filter above it: the packages.
/** @param {Record<string, unknown>} packages @param {number} rank */
function packagesTable(packages, rank) {
  const total = Object.keys(packages || {}).length;
  const filter = h("input", { type: "search", placeholder: "name or version", oninput: () => show() });
  const count = h("span", { class: "muted", role: "status" });
  const box = h("div");
  function show() {
    const rows = packageRows(packages, filter.value);
    count.textContent = rows.length === total ? `${total} packages` : `${rows.length} of ${total} packages`;
    replace(box, rows.length
      ? simpleTable(`Python packages of rank ${rank}`, ["Package", "Version"], rows.map(([name, version]) => [name, h("span", { class: "mono" }, version)]))
      : h("p", { class: "muted" }, "No package matches."));
  }
  show();
  return h("details", { class: "env-details" },
    h("summary", null, `Packages (${total})`),
    h("div", { class: "toolbar" }, labeled("Filter packages", filter), count),
    box);
}

/** @param {any} env @param {number} rank */
function envTable(env, rank) {
  const rows = envRows(env);
  const kinds = ["kept", "hashed", "redacted"].map((k) => `${rows.filter((r) => r.kind === k).length} ${k}`).join(", ");
  return h("details", { class: "env-details" },
    h("summary", null, `Environment variables (${kinds})`),
    h("p", { class: "muted" }, "Kept: variables that say how the run behaves, with their values; hashed: their values are recorded as a hash only; redacted: secrets, nothing of their values."),
    rows.length
      ? simpleTable(`Environment variables of rank ${rank}`, ["Name", "Value"],
          rows.map((r) => [h("span", { class: "mono" }, r.name), r.kind === "kept" ? h("span", { class: "mono" }, r.value) : h("span", { class: "muted" }, r.value)]),
          { wrap: [1] })
      : h("p", { class: "muted" }, "None."));
}

/** @param {RankEnvironment} rank */
function rankCard(rank) {
  const record = rank.record || {};
  const sections = record.sections || {};
  const python = sections.python || {};
  const gpu = sections.gpu || {};
  const cpu = sections.cpu || {};
  const os = sections.os || {};
  const host = record.volatile?.hostname;
  const flags = Array.isArray(cpu.flags) ? cpu.flags : [];
  const errors = Array.isArray(record.errors) ? record.errors : [];
  const label = `Rank ${rank.rank}`;
  return h("section", { class: "card", "aria-label": label, dataset: { rank: String(rank.rank) } },
    h("h3", null, label, " ", h("span", { class: "muted heading-note" }, [host ? `on ${host}, ` : "", `captured ${fmt.time(rank.received_at)}`].join(""))),
    facts([
      ["Python", python.version ? h("span", { title: python.executable || null }, `${python.version}${python.implementation ? ` (${python.implementation})` : ""}`) : null],
      ...frameworkFacts(sections.framework),
      ["GPUs", gpuSummary(gpu.devices) || "none"],
      ["Driver", gpu.driver ? `${gpu.driver}${gpu.cuda_driver ? ` (CUDA ${gpu.cuda_driver})` : ""}` : null],
      ["CPU", cpu.model ? `${cpu.model}${cpu.logical_cpus ? `, ${cpu.logical_cpus} logical CPUs` : ""}` : null],
      ["OS", [os.distribution || os.system, os.kernel ? `kernel ${os.kernel}` : null, os.machine, os.libc].filter(Boolean).join(", ") || null],
    ]),
    gpu.note ? h("p", { class: "muted" }, `GPUs: ${gpu.note}`) : null,
    flags.length
      ? h("details", { class: "env-details" }, h("summary", null, `CPU flags (${flags.length})`),
          h("ul", { class: "flag-list", "aria-label": `CPU flags of rank ${rank.rank}` }, flags.map((f) => h("li", { class: "chip mono" }, String(f)))))
      : null,
    packagesTable(sections.packages || {}, rank.rank),
    envTable(sections.env, rank.rank),
    errors.length
      ? h("div", { class: "notice", role: "note", "aria-label": `Probe errors of rank ${rank.rank}` },
          h("h4", null, "What the capture could not read"),
          h("ul", null, errors.map((e) => h("li", null, h("strong", null, e.section), ": ", e.message))))
      : null,
  );
}

/** @param {TrialEnvironment} env @param {any} trial */
function ranksPart(env, trial) {
  if (env.run_id === null || env.run_id === undefined) {
    return h("p", { class: "muted" }, "The trial has not run yet: a run records its environment when it starts.");
  }
  if (!env.ranks.length) {
    const running = trial.state === "RUNNING" && trial.run_id === env.run_id;
    return h("p", { class: "muted", dataset: { capture: "none" } }, running
      ? `Run ${env.run_id} has not recorded its environment yet (each rank sends it in its first seconds).`
      : `Run ${env.run_id} recorded no environment (it ended before its capture, ran with SHIPYARD_CAPTURE_ENVIRONMENT=0, or ran before Shipyard captured environments).`);
  }
  const same = sameAsFirst(env.ranks);
  const first = env.ranks[0].rank;
  return env.ranks.map((r) => same.has(r.rank)
    ? h("section", { class: "card compact", "aria-label": `Rank ${r.rank}`, dataset: { rank: String(r.rank) } },
        h("h3", null, `Rank ${r.rank} `, h("span", { class: "muted heading-note" }, `${r.record?.volatile?.hostname ? `on ${r.record.volatile.hostname}: ` : ""}the same environment as rank ${first}`)))
    : rankCard(r));
}

// What re-rendering would change: a new run, or a rank's capture that arrived.
/** @param {TrialEnvironment} env */
function signature(env) {
  return JSON.stringify([env.run_id, env.ranks.map((r) => [r.rank, r.received_at]), env.image, env.code]);
}

export function createEnvironmentTab(panel, page) {
  const controller = new AbortController();
  /** @type {number | null} the run the user chose (null: the latest) */
  let chosen = null;
  let shown = "";
  let shownFor = "";

  /** @param {TrialEnvironment} env */
  function render(env) {
    const trial = page.trial;
    const config = page.experiment?.config || {};
    const configured = { environment: config.environment, resources: config.resources, entrypoint: config.entrypoint };
    const runs = (trial.runs || []).map((r) => r.run_id);
    const runPicker = runs.length > 1
      ? labeled("Run", select(runs.map((id) => [String(id), `run ${id}${id === trial.run_id ? " (latest)" : ""}`]), String(env.run_id), {
          onchange: (/** @type {Event} */ event) => {
            chosen = Number(/** @type {HTMLSelectElement} */ (event.target).value);
            refresh(controller.signal).catch(failed);
          },
        }))
      : null;
    replace(
      panel,
      h("div", { class: "toolbar" },
        h("h2", { style: { margin: 0 } }, env.run_id === null || env.run_id === undefined ? "What the trial will run" : `What run ${env.run_id} ran`),
        runPicker),
      codeCard(env),
      imageCard(env),
      h("h2", { style: { marginTop: "18px" } }, "Each rank's environment"),
      ranksPart(env, trial),
      h("h2", { style: { marginTop: "18px" } }, "What the experiment asked for"),
      h("pre", { class: "code-block", tabindex: "0", "aria-label": "Environment, resources and entrypoint from the experiment config" },
        toYaml(Object.fromEntries(Object.entries(configured).filter(([, v]) => v !== undefined)))),
    );
  }

  /** @param {AbortSignal} [signal] */
  async function refresh(signal) {
    const trial = page.trial;
    shownFor = `${trial.run_id}:${trial.state}`;
    /** @type {TrialEnvironment} */
    const env = await api.trialEnvironment(trial.id, { run_id: chosen }, signal);
    const next = signature(env) + trial.state;
    if (next === shown) return;
    shown = next;
    render(env);
  }

  /** @param {unknown} error */
  function failed(error) {
    if (!isAbort(error)) replace(panel, errorBox(error));
  }

  replace(panel, loading("the environment"));
  refresh(controller.signal).catch(failed);
  return {
    async update(trial, signal) {
      if (chosen !== null) return; // a run the user chose does not change
      // A new run or state; or a run that started a minute ago or less, whose ranks'
      // captures may still arrive.
      const last = (trial.runs || []).at(-1);
      const starting = trial.state === "RUNNING" && last && !last.ended_at && (fmt.durationSeconds(last.started_at) ?? Infinity) < 60;
      if (`${trial.run_id}:${trial.state}` !== shownFor || starting) await refresh(signal).catch(failed);
    },
    destroy() {
      controller.abort();
    },
  };
}
