// Building blocks of the pages: an element builder and the small widgets every page uses.

import { percent } from "./format.js";

// h("a", {href: "/x", class: "link"}, "text", child, [more children]); `on*` attributes
// become listeners, `dataset` and `style` objects are assigned, false/null are left out.
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (key.startsWith("on") && typeof value === "function") {
      el.addEventListener(key.slice(2), value);
    } else if (key === "dataset" || key === "style") {
      Object.assign(el[key], value);
    } else if (key === "class") {
      el.className = value;
    } else if (value === true) {
      el.setAttribute(key, "");
    } else {
      el.setAttribute(key, value);
    }
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    if (Array.isArray(child)) append(el, child);
    else el.append(child instanceof Node ? child : String(child));
  }
}

export function replace(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

const STATE_TONES = {
  ACTIVE: "running",
  RUNNING: "running",
  STARTING: "running",
  RESTARTING: "warn",
  QUEUED: "waiting",
  PAUSED: "waiting",
  COMPLETED: "good",
  STOPPED: "muted",
  CANCELED: "muted",
  ERRORED: "bad",
};

export function stateBadge(state) {
  return h("span", { class: `badge tone-${STATE_TONES[state] || "muted"}` }, state);
}

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
export function emptyState(title, text, command) {
  return h(
    "div",
    { class: "empty-state" },
    h("h2", null, title),
    text ? h("p", null, text) : null,
    command ? h("div", { class: "command" }, h("code", null, command), copyButton(command)) : null,
  );
}

export function errorBox(error) {
  return h("div", { class: "error-box", role: "alert" }, String(error.message || error));
}

export function loading(what) {
  return h("p", { class: "loading", role: "status" }, `Loading ${what}…`);
}

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
    const index = buttons.indexOf(document.activeElement);
    if (index < 0) return;
    const step = { ArrowRight: 1, ArrowLeft: -1 }[event.key];
    if (!step) return;
    event.preventDefault();
    const next = buttons[(index + step + buttons.length) % buttons.length];
    next.focus();
    next.click();
  });
  bar.append(...buttons);
  return bar;
}

export function tabPanel(active) {
  return h("section", { class: "tab-panel", id: "tab-panel", role: "tabpanel", "aria-labelledby": `tab-${active}` });
}

// A list of facts: [[term, value], ...]; a null value leaves the fact out.
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
export function simpleTable(caption, headers, rows, { numeric = [], wrap = [] } = {}) {
  const cellClass = (i) => [numeric.includes(i) ? "num" : null, wrap.includes(i) ? "reason-cell" : null].filter(Boolean).join(" ") || null;
  return h("div", { class: "table-scroll" }, h("table", { class: "data-table" },
    h("caption", { class: "visually-hidden" }, caption),
    h("thead", null, h("tr", null, headers.map((title, i) => h("th", { scope: "col", class: numeric.includes(i) ? "num" : null }, title)))),
    h("tbody", null, rows.map((cells) => h("tr", null, cells.map((cell, i) => h("td", { class: cellClass(i) }, cell ?? "—")))))));
}

export function labeled(labelText, control, hint) {
  const id = control.id || `control-${Math.random().toString(36).slice(2, 9)}`;
  control.id = id;
  return h("span", { class: "field" }, h("label", { for: id }, labelText), control, hint || null);
}

export function select(options, value, attrs) {
  const el = h("select", attrs);
  for (const option of options) {
    const [optionValue, text] = Array.isArray(option) ? option : [option, option];
    el.append(h("option", { value: optionValue, selected: String(optionValue) === String(value) }, text));
  }
  return el;
}
