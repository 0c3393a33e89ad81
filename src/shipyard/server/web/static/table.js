// @ts-check
// A sortable table that stays fast with 10,000 rows: it sorts all of them but draws one page
// at a time. Keyboard: Tab reaches the table's current row, the arrow keys, Home, End,
// PageUp and PageDown move between rows, Enter opens the row's link, Space (de)selects it.

import { h, replace } from "./dom.js";
import { integer } from "./format.js";
import { parseSort, rowOrder } from "./sorting.js";

/** @typedef {import("./dom.js").Child} Child */
/**
 * @template Row
 * @typedef {object} Column
 * @property {string} key
 * @property {string} title
 * @property {(row: Row) => unknown} [value] its sort value (default: row[key])
 * @property {(row: Row) => Child} [render] (default: row[key])
 * @property {boolean} [numeric]
 * @property {boolean} [wrap] long text
 * @property {boolean} [sortable] default true
 * @property {string} [headerTitle]
 */
/**
 * @template Row
 * @typedef {object} Selection
 * @property {Set<string>} selected the keys of the rows selected
 * @property {number} [max]
 * @property {(row: Row) => string} label
 * @property {() => void} [onChange]
 */
/**
 * @template Row
 * @typedef {object} TableOptions
 * @property {string} caption
 * @property {Column<Row>[]} columns
 * @property {(row: Row) => string | number} rowKey
 * @property {boolean} [rowLink] Enter opens the row's first link
 * @property {string | null} [sort] "key" or "-key"
 * @property {(sort: string) => void} [onSort]
 * @property {number} [pageSize]
 * @property {Selection<Row> | null} [selection]
 * @property {(key: string | null) => void} [onHover]
 * @property {() => Child} [empty]
 */

/** @template Row */
export class DataTable {
  /** @param {TableOptions<Row>} options */
  constructor({ caption, columns, rowKey, rowLink, sort, onSort, pageSize = 100, selection, onHover, empty }) {
    this.columns = columns;
    this.rowKey = rowKey;
    this.rowLink = rowLink;
    this.sort = parseSort(sort);
    this.onSort = onSort;
    this.pageSize = pageSize;
    this.selection = selection;
    this.onHover = onHover;
    this.empty = empty;
    /** @type {Row[]} */
    this.rows = [];
    /** @type {Row[]} */
    this.sorted = [];
    this.page = 0;
    /** @type {string | null} */
    this.highlighted = null;
    /** @type {string | null} */
    this.focusKey = null;

    this.thead = h("thead");
    this.tbody = h("tbody");
    this.table = h("table", { class: "data-table" }, h("caption", { class: "visually-hidden" }, caption), this.thead, this.tbody);
    this.pager = h("div", { class: "pager" });
    this.element = h("div", { class: "table-block" }, h("div", { class: "table-scroll" }, this.table), this.pager);
    this.tbody.addEventListener("keydown", (event) => this.onKey(event));
    this.tbody.addEventListener("mouseover", (event) => this.hoverFrom(event));
    this.tbody.addEventListener("mouseleave", () => this.onHover?.(null));
    this.tbody.addEventListener("focusin", (event) => this.hoverFrom(event));
    this.renderHead();
  }

  /** @param {Row[]} rows */
  setRows(rows) {
    this.rows = rows;
    this.resort();
    this.renderBody();
  }

  // New columns (and rows): one sort and one drawing for both.
  /**
   * @param {Column<Row>[]} columns
   * @param {Row[]} [rows]
   */
  setColumns(columns, rows = this.rows) {
    this.columns = columns;
    this.rows = rows;
    this.renderHead();
    this.resort();
    this.renderBody();
  }

  resort() {
    const column = this.columns.find((c) => c.key === this.sort.key);
    this.sorted = this.rows.slice();
    if (column && column.sortable !== false) {
      const value = column.value || ((row) => cell(row, column.key));
      this.sorted.sort(rowOrder(value, this.sort.desc));
    }
    const pages = Math.max(1, Math.ceil(this.sorted.length / this.pageSize));
    this.page = Math.min(this.page, pages - 1);
  }

  renderHead() {
    const cells = [];
    if (this.selection) cells.push(h("th", { scope: "col", class: "select-cell" }, h("span", { class: "visually-hidden" }, "Select")));
    for (const column of this.columns) {
      const sorted = this.sort.key === column.key;
      const ariaSort = sorted ? (this.sort.desc ? "descending" : "ascending") : "none";
      const label = column.sortable === false
        ? column.title
        : h(
            "button",
            { type: "button", class: "sort-button", onclick: () => this.sortBy(column.key), title: column.headerTitle },
            column.title,
            h("span", { class: "sort-mark", "aria-hidden": "true" }, sorted ? (this.sort.desc ? " ▼" : " ▲") : ""),
          );
      cells.push(h("th", { scope: "col", "aria-sort": column.sortable === false ? null : ariaSort, class: column.numeric ? "num" : null }, label));
    }
    replace(this.thead, h("tr", null, cells));
  }

  /** @param {string} key */
  sortBy(key) {
    this.sort = this.sort.key === key ? { key, desc: !this.sort.desc } : { key, desc: false };
    this.onSort?.((this.sort.desc ? "-" : "") + key);
    this.renderHead();
    this.resort();
    this.renderBody();
  }

  renderBody() {
    const start = this.page * this.pageSize;
    const visible = this.sorted.slice(start, start + this.pageSize);
    if (!visible.length) {
      const span = this.columns.length + (this.selection ? 1 : 0);
      replace(this.tbody, h("tr", null, h("td", { colspan: String(span), class: "empty-cell" }, this.empty ? this.empty() : "Nothing to show.")));
    } else {
      const keys = visible.map((row) => String(this.rowKey(row)));
      if (this.focusKey === null || !keys.includes(this.focusKey)) this.focusKey = keys[0];
      replace(this.tbody, visible.map((row) => this.renderRow(row)));
    }
    this.renderPager();
  }

  /** @param {Row} row */
  renderRow(row) {
    const key = String(this.rowKey(row));
    const tr = h("tr", {
      tabindex: key === this.focusKey ? "0" : "-1",
      dataset: { key },
      class: key === this.highlighted ? "highlighted" : null,
    });
    if (this.selection) {
      const checked = this.selection.selected.has(key);
      const full = !checked && this.selection.max && this.selection.selected.size >= this.selection.max;
      const box = h("input", {
        type: "checkbox",
        checked,
        disabled: full,
        "aria-label": this.selection.label(row),
        title: full ? `At most ${this.selection.max} can be selected` : null,
        onchange: () => this.toggle(key),
      });
      tr.append(h("td", { class: "select-cell" }, box));
    }
    for (const column of this.columns) {
      const content = column.render ? column.render(row) : cell(row, column.key);
      tr.append(h("td", { class: column.numeric ? "num" : column.wrap ? "reason-cell" : null }, content ?? "—"));
    }
    return tr;
  }

  /** @param {string} key */
  toggle(key) {
    if (!this.selection) return;
    const selected = this.selection.selected;
    if (selected.has(key)) selected.delete(key);
    else if (!this.selection.max || selected.size < this.selection.max) selected.add(key);
    this.selection.onChange?.();
    this.renderBody();
    /** @type {HTMLElement | null} */ (this.tbody.querySelector(`tr[data-key="${CSS.escape(key)}"]`))?.focus();
  }

  renderPager() {
    const total = this.sorted.length;
    if (total <= this.pageSize) {
      replace(this.pager, total ? h("span", null, `${integer(total)} ${total === 1 ? "row" : "rows"}`) : null);
      return;
    }
    const pages = Math.ceil(total / this.pageSize);
    const first = this.page * this.pageSize + 1;
    const last = Math.min(total, first + this.pageSize - 1);
    /** @param {number} page */
    const go = (page) => {
      this.page = page;
      this.renderBody();
    };
    replace(
      this.pager,
      h("button", { type: "button", class: "button small", disabled: this.page === 0, onclick: () => go(this.page - 1) }, "Previous"),
      h("span", { role: "status" }, `Rows ${integer(first)}–${integer(last)} of ${integer(total)}`),
      h("button", { type: "button", class: "button small", disabled: this.page >= pages - 1, onclick: () => go(this.page + 1) }, "Next"),
    );
  }

  // Show a row as the one pointed at elsewhere (e.g. its curve is hovered in a chart).
  /** @param {string | number | null | undefined} key */
  highlight(key) {
    const text = key === null || key === undefined ? null : String(key);
    if (text === this.highlighted) return;
    this.tbody.querySelector("tr.highlighted")?.classList.remove("highlighted");
    this.highlighted = text;
    if (text !== null) this.tbody.querySelector(`tr[data-key="${CSS.escape(text)}"]`)?.classList.add("highlighted");
  }

  /** @param {Event} event */
  hoverFrom(event) {
    const tr = rowOf(event);
    if (!tr || !this.onHover) return;
    this.onHover(tr.dataset.key ?? null);
  }

  /** @param {KeyboardEvent} event */
  onKey(event) {
    const tr = rowOf(event);
    if (!tr) return;
    const rows = [...this.tbody.querySelectorAll("tr")].filter((row) => row.dataset.key !== undefined);
    const index = rows.indexOf(tr);
    const onRow = event.target === tr;
    const moves = { ArrowDown: index + 1, ArrowUp: index - 1, Home: 0, End: rows.length - 1, PageDown: index + 10, PageUp: index - 10 };
    if (event.key in moves && (onRow || event.key.startsWith("Arrow"))) {
      event.preventDefault();
      const target = rows[Math.max(0, Math.min(rows.length - 1, moves[event.key]))];
      this.focusRow(target);
    } else if (onRow && event.key === "Enter" && this.rowLink) {
      event.preventDefault();
      /** @type {HTMLElement | null} */ (tr.querySelector("a[href]"))?.click();
    } else if (onRow && event.key === " " && this.selection) {
      event.preventDefault();
      this.toggle(String(tr.dataset.key));
    }
  }

  /** @param {HTMLTableRowElement} tr */
  focusRow(tr) {
    for (const row of this.tbody.querySelectorAll("tr")) if (row.getAttribute("tabindex") === "0") row.tabIndex = -1;
    tr.tabIndex = 0;
    this.focusKey = tr.dataset.key ?? null;
    tr.focus();
  }
}

// A row's own field (a column without value or render).
/**
 * @param {unknown} row
 * @param {string} key
 */
function cell(row, key) {
  return /** @type {Record<string, any>} */ (row)[key];
}

// The table row an event happened in, if any.
/** @param {Event} event */
function rowOf(event) {
  const target = event.target instanceof Element ? event.target.closest("tr[data-key]") : null;
  return target instanceof HTMLTableRowElement ? target : null;
}
