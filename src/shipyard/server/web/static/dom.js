// @ts-check
// Building blocks of the pages: an element builder and the small widgets every page uses.

import { percent } from "./format.js";

/** @typedef {Node | string | number | boolean | null | undefined | any[]} Child an array: its children, nested */
/** @typedef {Record<string, unknown> | null | undefined} Attrs */

// h("a", {href: "/x", class: "link"}, "text", child, [more children]); `on*` attributes
// become listeners, `dataset` and `style` objects are assigned, false/null are left out.
/**
 * @template {keyof HTMLElementTagNameMap} K
 * @param {K} tag
 * @param {Attrs} [attrs]
 * @param {Child[]} children
 * @returns {HTMLElementTagNameMap[K]}
 */
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (key.startsWith("on") && typeof value === "function") {
      el.addEventListener(key.slice(2), /** @type {EventListener} */ (value));
    } else if (key === "dataset") {
      Object.assign(el.dataset, value);
    } else if (key === "style") {
      Object.assign(el.style, value);
    } else if (key === "class") {
      el.className = String(value);
    } else if (value === true) {
      el.setAttribute(key, "");
    } else {
      el.setAttribute(key, String(value));
    }
  }
  append(el, children);
  return el;
}

/**
 * @param {Element} el
 * @param {Child[]} children
 */
function append(el, children) {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    if (Array.isArray(child)) append(el, child);
    else el.append(child instanceof Node ? child : String(child));
  }
}

/**
 * @template {Element} E
 * @param {E} el
 * @param {Child[]} children
 * @returns {E}
 */
export function replace(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

/** @type {Record<string, string>} */
const STATE_TONES = {
  ACTIVE: "running",
  RUNNING: "running",
  STARTING: "running",
  QUEUED: "waiting",
  PAUSED: "waiting",
  COMPLETED: "good",
  STOPPED: "muted",
  CANCELED: "muted",
  ERRORED: "bad",
};

/** @param {string} state */
export function stateBadge(state) {
  return h("span", { class: `badge tone-${STATE_TONES[state] || "muted"}` }, state);
}

/**
 * @param {number | null | undefined} fraction
 * @param {string} [label]
 */
export function progressBar(fraction, label) {
  const value = Math.round(Math.max(0, Math.min(1, fraction || 0)) * 100);
  return h(
    "span",
    {
      class: "progress",
      role: "progressbar",
      "aria-valuemin": "0",
      "aria-valuemax": "100",
      "aria-valuenow": String(value),
      "aria-label": label || "progress",
      title: percent(fraction),
    },
    h("span", { class: "progress-fill", style: { width: `${value}%` } }),
  );
}

// What an empty page says: what is missing and what to do next.
/**
 * @param {string} title
 * @param {Child} [text]
 * @param {string} [command]
 */
export function emptyState(title, text, command) {
  return h(
    "div",
    { class: "empty-state" },
    h("h2", null, title),
    text ? h("p", null, text) : null,
    command ? h("div", { class: "command" }, h("code", null, command), copyButton(command)) : null,
  );
}

/** @param {unknown} error */
export function errorBox(error) {
  const message = error instanceof Object && "message" in error ? error.message : null;
  return h("div", { class: "error-box", role: "alert" }, String(message || error));
}

/** @param {string} what */
export function loading(what) {
  return h("p", { class: "loading", role: "status" }, `Loading ${what}…`);
}

/** @param {string} text */
export async function copyText(text) {
  try {
    await navigator.clipboard.writeText(text);
    return true;
  } catch {
    // No clipboard API (an insecure origin): the old way, through a selected text area.
    const area = h("textarea", { class: "visually-hidden", "aria-hidden": "true" });
    area.value = text;
    document.body.append(area);
    area.select();
    const done = document.execCommand("copy");
    area.remove();
    return done;
  }
}

/**
 * @param {string | (() => string)} text
 * @param {string} [label]
 */
export function copyButton(text, label = "Copy") {
  const button = h("button", { type: "button", class: "button small" }, label);
  button.addEventListener("click", async () => {
    const done = await copyText(typeof text === "function" ? text() : text);
    button.textContent = done ? "Copied" : "Copy failed";
    setTimeout(() => (button.textContent = label), 1500);
  });
  return button;
}

// A row of tabs (WAI-ARIA tabs pattern: arrow keys move between them).
/**
 * @param {{id: string, title: string}[]} tabs
 * @param {string} active
 * @param {(id: string) => void} onSelect
 * @param {string} label
 */
export function tabBar(tabs, active, onSelect, label) {
  const bar = h("div", { class: "tabs", role: "tablist", "aria-label": label });
  const buttons = tabs.map(({ id, title }) =>
    h(
      "button",
      {
        type: "button",
        role: "tab",
        id: `tab-${id}`,
        "aria-selected": String(id === active),
        "aria-controls": "tab-panel",
        tabindex: id === active ? "0" : "-1",
        onclick: () => onSelect(id),
      },
      title,
    ),
  );
  bar.addEventListener("keydown", (event) => {
    const index = buttons.indexOf(/** @type {HTMLButtonElement} */ (document.activeElement));
    if (index < 0) return;
    const step = /** @type {Record<string, number>} */ ({ ArrowRight: 1, ArrowLeft: -1 })[event.key];
    if (!step) return;
    event.preventDefault();
    const next = buttons[(index + step + buttons.length) % buttons.length];
    next.focus();
    next.click();
  });
  bar.append(...buttons);
  return bar;
}

/** @param {string} active */
export function tabPanel(active) {
  return h("section", { class: "tab-panel", id: "tab-panel", role: "tabpanel", "aria-labelledby": `tab-${active}` });
}

// A list of facts: [[term, value], ...]; a null value leaves the fact out.
/** @param {[string, Child][]} pairs */
export function facts(pairs) {
  return h(
    "dl",
    { class: "facts" },
    pairs
      .filter(([, value]) => value !== null && value !== undefined && value !== "")
      .map(([term, value]) => h("div", null, h("dt", null, term), h("dd", null, value))),
  );
}

// A plain table (no sorting, no paging) of rows of cells; numeric: the columns aligned as
// numbers; wrap: those whose long text wraps.
/**
 * @param {string} caption
 * @param {string[]} headers
 * @param {Child[][]} rows
 * @param {{numeric?: number[], wrap?: number[]}} [options]
 */
export function simpleTable(caption, headers, rows, { numeric = [], wrap = [] } = {}) {
  /** @param {number} i */
  const cellClass = (i) => [numeric.includes(i) ? "num" : null, wrap.includes(i) ? "reason-cell" : null].filter(Boolean).join(" ") || null;
  return h("div", { class: "table-scroll" }, h("table", { class: "data-table" },
    h("caption", { class: "visually-hidden" }, caption),
    h("thead", null, h("tr", null, headers.map((title, i) => h("th", { scope: "col", class: numeric.includes(i) ? "num" : null }, title)))),
    h("tbody", null, rows.map((cells) => h("tr", null, cells.map((cell, i) => h("td", { class: cellClass(i) }, cell ?? "—")))))));
}

/**
 * @param {string} labelText
 * @param {HTMLElement} control
 * @param {Child} [hint]
 */
export function labeled(labelText, control, hint) {
  const id = control.id || `control-${Math.random().toString(36).slice(2, 9)}`;
  control.id = id;
  return h("span", { class: "field" }, h("label", { for: id }, labelText), control, hint || null);
}

/**
 * @param {(string | [string, string])[]} options values, or [value, text] pairs
 * @param {string} value
 * @param {Attrs} [attrs]
 */
export function select(options, value, attrs) {
  const el = h("select", attrs);
  for (const option of options) {
    const [optionValue, text] = Array.isArray(option) ? option : [option, option];
    el.append(h("option", { value: optionValue, selected: String(optionValue) === String(value) }, text));
  }
  return el;
}
