// @ts-check
// The trial's artifacts (ctx.artifacts): its images as a gallery by step (the newest step
// first), its texts, its tables (their first rows) and every other file as a download.
// Live while the trial runs: the list is read again at each update, shown again if changed.

import { api } from "../api.js";
import { h, replace, errorBox, loading, emptyState, simpleTable } from "../dom.js";
import * as fmt from "../format.js";

export const TABLE_ROWS = 200; // a table shows its first rows; the download has them all
export const GALLERY_STEPS = 20; // the newest steps with images; the CLI lists the others
const MAX_READ_BYTES = 2 * 2 ** 20; // a longer text or table is a download only

/**
 * @typedef {{id: number, trial_id: number, name: string, steps_completed: number | null,
 *   kind: string, media_type: string, size: number, sha256: string, created_at: string}} Artifact
 */

/**
 * The images by step, the newest step first (those of no step last), each step's by name.
 * @param {Artifact[]} artifacts
 * @returns {{step: number | null, images: Artifact[]}[]}
 */
export function imagesByStep(artifacts) {
  /** @type {Map<number | null, Artifact[]>} */
  const steps = new Map();
  for (const a of artifacts) {
    if (a.kind !== "image") continue;
    const list = steps.get(a.steps_completed) || [];
    list.push(a);
    steps.set(a.steps_completed, list);
  }
  /** @param {number | null} step */
  const rank = (step) => (step === null ? -1 : step);
  return [...steps.entries()]
    .sort(([a], [b]) => rank(b) - rank(a))
    .map(([step, images]) => ({ step, images: images.sort((x, y) => x.name.localeCompare(y.name)) }));
}

/**
 * RFC 4180 CSV: fields split at commas, quoted fields may hold commas, quotes ("") and
 * line breaks; a final line break ends the last row.
 * @param {string} text
 * @returns {string[][]}
 */
export function parseCsv(text) {
  /** @type {string[][]} */
  const rows = [];
  /** @type {string[]} */
  let row = [];
  let field = "";
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') {
        field += '"';
        i++;
      } else if (c === '"') {
        quoted = false;
      } else {
        field += c;
      }
    } else if (c === '"') {
      quoted = true;
    } else if (c === ",") {
      row.push(field);
      field = "";
    } else if (c === "\n" || c === "\r") {
      if (c === "\r" && text[i + 1] === "\n") i++;
      row.push(field);
      rows.push(row);
      row = [];
      field = "";
    } else {
      field += c;
    }
  }
  if (field !== "" || row.length) {
    row.push(field);
    rows.push(row);
  }
  return rows;
}

/**
 * A table artifact's columns and rows, from its content: log_table's JSON
 * ({"columns", "rows"}), a JSON list of objects, or CSV (the first row names the columns).
 * @param {string} text
 * @param {string} mediaType
 * @returns {{columns: string[], rows: unknown[][]}}
 */
export function tableOf(text, mediaType) {
  if (mediaType === "text/csv") {
    const [columns = [], ...rows] = parseCsv(text);
    return { columns, rows };
  }
  const data = JSON.parse(text);
  if (data && Array.isArray(data.columns) && Array.isArray(data.rows)) {
    return { columns: data.columns.map(String), rows: data.rows.map((/** @type {unknown} */ r) => (Array.isArray(r) ? r : [r])) };
  }
  if (Array.isArray(data) && data.every((r) => r && typeof r === "object" && !Array.isArray(r))) {
    const columns = [...new Set(data.flatMap((r) => Object.keys(r)))];
    return { columns, rows: data.map((r) => columns.map((c) => r[c])) };
  }
  throw new Error("not a table: expected {columns, rows}, a list of objects, or CSV");
}

/** @param {unknown} value */
export function cellText(value) {
  if (value === null || value === undefined) return "—";
  return typeof value === "object" ? JSON.stringify(value) : String(value);
}

/** @param {Artifact} a */
function stepLabel(a) {
  return a.steps_completed === null ? "no step" : `step ${fmt.integer(a.steps_completed)}`;
}

/** @param {Artifact} a */
function contentUrl(a) {
  return api.artifactContentUrl(a.trial_id, a.id);
}

/** @param {Artifact} a @param {string} [label] */
function downloadLink(a, label = "Download") {
  return h("a", { class: "button small", href: contentUrl(a), download: a.name, "aria-label": `Download ${a.name} (${stepLabel(a)})` }, label);
}

/** @param {Artifact[]} artifacts */
function gallery(artifacts) {
  const steps = imagesByStep(artifacts);
  if (!steps.length) return null;
  const shown = steps.slice(0, GALLERY_STEPS);
  return h("section", { class: "card", "aria-label": "Images" },
    h("h3", null, "Images"),
    shown.map(({ step, images }) =>
      h("section", { class: "artifact-step", dataset: { step: step === null ? "none" : String(step) } },
        h("h4", null, step === null ? "No step" : `Step ${fmt.integer(step)}`),
        h("div", { class: "gallery" },
          images.map((a) =>
            h("figure", { dataset: { artifact: a.name } },
              h("a", { href: contentUrl(a), target: "_blank", rel: "noopener" },
                h("img", { src: contentUrl(a), alt: `${a.name}, ${stepLabel(a)}` })),
              h("figcaption", null, a.name, " ", h("span", { class: "muted" }, fmt.bytes(a.size)))))))),
    steps.length > shown.length
      ? h("p", { class: "muted" }, `${steps.length - shown.length} older steps with images are not shown: `, h("code", null, `shipyard trial artifacts ${artifacts[0].trial_id}`), " lists every one.")
      : null);
}

/**
 * A text or a table: its content, read once per version (the cache is by id and sha256).
 * @param {Artifact} a
 * @param {Map<string, Promise<string>>} cache
 * @param {(text: string) => Node} render
 */
function readInto(a, cache, render) {
  const box = h("div", null, loading(a.name));
  if (a.size > MAX_READ_BYTES) {
    return replace(box, h("p", { class: "muted" }, `${fmt.bytes(a.size)}: too long to show here. `, downloadLink(a)));
  }
  const key = `${a.id}:${a.sha256}`;
  if (!cache.has(key)) cache.set(key, api.artifactText(a.trial_id, a.id));
  /** @type {Promise<string>} */ (cache.get(key))
    .then((text) => replace(box, render(text)))
    .catch((error) => {
      cache.delete(key);
      replace(box, errorBox(error));
    });
  return box;
}

/** @param {Artifact} a @param {Map<string, Promise<string>>} cache */
function textCard(a, cache) {
  return h("details", { class: "card artifact-text", open: true, dataset: { artifact: a.name } },
    h("summary", null, a.name, " ", h("span", { class: "muted" }, `${stepLabel(a)} · ${fmt.bytes(a.size)}`), " ", downloadLink(a)),
    readInto(a, cache, (text) => h("pre", { class: "code-block" }, text)));
}

/** @param {Artifact} a @param {Map<string, Promise<string>>} cache */
function tableCard(a, cache) {
  return h("section", { class: "card artifact-table", "aria-label": `Table ${a.name}`, dataset: { artifact: a.name } },
    h("h3", null, a.name, " ", h("span", { class: "muted heading-note" }, stepLabel(a)), " ", downloadLink(a)),
    readInto(a, cache, (text) => {
      const { columns, rows } = tableOf(text, a.media_type);
      const shown = rows.slice(0, TABLE_ROWS);
      return h("div", null,
        simpleTable(`Table ${a.name}`, columns, shown.map((row) => columns.map((_, i) => cellText(row[i])))),
        rows.length > shown.length ? h("p", { class: "muted" }, `The first ${TABLE_ROWS} of ${fmt.integer(rows.length)} rows.`) : null);
    }));
}

/** @param {Artifact[]} files */
function filesTable(files) {
  if (!files.length) return null;
  return h("section", { class: "card", "aria-label": "Files" },
    h("h3", null, "Files"),
    simpleTable("Files", ["Name", "Step", "Media type", "Size", "Created", ""],
      files.map((a) => [h("code", null, a.name), a.steps_completed === null ? "—" : fmt.integer(a.steps_completed), a.media_type, fmt.bytes(a.size), fmt.time(a.created_at), downloadLink(a)]),
      { numeric: [1, 3] }));
}

/** @param {Artifact[]} artifacts */
function newestFirst(artifacts) {
  return [...artifacts].sort((a, b) => (b.steps_completed ?? -1) - (a.steps_completed ?? -1) || a.name.localeCompare(b.name));
}

export function createArtifactsTab(panel, page) {
  /** @type {Map<string, Promise<string>>} */
  const cache = new Map();
  let shown = "";

  /** @param {AbortSignal} [signal] */
  async function load(signal) {
    /** @type {Artifact[]} */
    const artifacts = await api.trialArtifacts(page.trial.id, signal);
    const version = artifacts.map((a) => `${a.id}:${a.sha256}`).join(",");
    if (version === shown) return;
    shown = version;
    if (!artifacts.length) {
      replace(panel, emptyState("No artifacts", "Training code keeps images, texts, tables and files beside its metrics with ctx.artifacts, e.g. ctx.artifacts.log_image(\"samples.png\", png_bytes, steps_completed=step)."));
      return;
    }
    const ordered = newestFirst(artifacts);
    const tables = ordered.filter((a) => a.kind === "table");
    const texts = ordered.filter((a) => a.kind === "text");
    replace(panel,
      gallery(artifacts),
      tables.length ? h("div", { "aria-label": "Tables" }, tables.map((a) => tableCard(a, cache))) : null,
      texts.length ? h("div", { "aria-label": "Texts" }, texts.map((a) => textCard(a, cache))) : null,
      filesTable(ordered.filter((a) => a.kind === "file")),
      h("p", { class: "muted" }, h("code", null, `shipyard trial artifacts ${page.trial.id}`), " lists them and ", h("code", null, `shipyard trial artifact-download ${page.trial.id} ARTIFACT_ID`), " downloads one."));
  }

  replace(panel, loading("artifacts"));
  load().catch((error) => replace(panel, errorBox(error)));
  return {
    /** @param {unknown} _trial @param {AbortSignal} [signal] */
    async update(_trial, signal) {
      await load(signal);
    },
  };
}
