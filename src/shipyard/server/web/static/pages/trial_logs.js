// @ts-check
// A trial's logs: every line from the start, then new ones as the trial prints them (the
// master long-polls: a line shows within a second). Search, a filter by rank (on the
// master) and by level (read from the text: ERROR, WARNING, INFO, DEBUG, tracebacks), and a
// download of what is loaded. Query: rank, q, level.

import { api, isAbort } from "../api.js";
import { h, replace, labeled, select } from "../dom.js";
import * as fmt from "../format.js";
import { query, updateQuery } from "../router.js";

const PAGE = 5000;
const WAIT_S = 20; // the master answers as soon as a line arrives
const SHOWN = 5000; // lines kept in the page; all are kept for search and download
const LEVELS = ["all", "error", "warning", "info", "debug"];
const RANK = { error: 3, warning: 2, info: 1, debug: 0 };

export function levelOf(text) {
  if (/\b(ERROR|CRITICAL|FATAL)\b|^Traceback |^\w*(Error|Exception)\b/.test(text)) return "error";
  if (/\bWARN(ING)?\b/.test(text)) return "warning";
  if (/\bDEBUG\b/.test(text)) return "debug";
  return "info";
}

function prefix(line) {
  if (line.stream === "launcher") return "launcher";
  if (line.stream === "rank" || line.rank) return `rank ${line.rank}`;
  return null;
}

export function createLogsTab(panel, page) {
  const params = query();
  const level = params.get("level") || "all";
  const state = { rank: params.get("rank") || "", q: params.get("q") || "", level: LEVELS.includes(level) ? level : "all" };
  let lines = [];
  let matching = 0; // lines that pass the filters, counted as they come
  let cursor = 0;
  let done = false;
  let controller = null;
  let retryDelay = 1000;
  const ranks = new Set([0]);

  const view = h("div", { class: "log-view", id: "log-view", tabindex: "0", role: "log", "aria-live": "off", "aria-label": `Output of trial ${page.trial.id}` });
  const info = h("span", { class: "muted", role: "status" });
  const search = h("input", { type: "search", value: state.q, placeholder: "text in the line", oninput: () => setFilter("q", search.value) });
  const rankSelect = h("select", { onchange: () => setRank(rankSelect.value) });
  /** @type {[string, string][]} */
  const levelOptions = LEVELS.map((l) => [l, l === "all" ? "all" : `${l}${l === "error" ? "" : " and above"}`]);
  const levelSelect = select(levelOptions, state.level, { onchange: () => setFilter("level", levelSelect.value) });
  const follow = h("input", { type: "checkbox", checked: true });
  const download = h("button", { type: "button", class: "button small", onclick: () => downloadLoaded() }, "Download");
  replace(
    panel,
    h("div", { class: "toolbar", role: "search", "aria-label": "Filter the logs" },
      labeled("Search", search), labeled("Rank", rankSelect), labeled("Level", levelSelect), labeled("Follow", follow), download, info),
    view,
  );
  fillRanks();

  function fillRanks() {
    for (let r = 0; r < (page.trial.slots || []).length; r++) ranks.add(r);
    const options = [["", "all"], ...[...ranks].sort((a, b) => a - b).map((r) => [String(r), String(r)])];
    if (state.rank && !ranks.has(Number(state.rank))) options.push([state.rank, state.rank]);
    replace(rankSelect, options.map(([value, text]) => h("option", { value, selected: value === state.rank }, text)));
  }

  function matches(line) {
    if (state.level !== "all" && RANK[levelOf(line.text)] < RANK[state.level]) return false;
    return !state.q || line.text.toLowerCase().includes(state.q.toLowerCase());
  }

  function lineElement(line) {
    const level = levelOf(line.text);
    const meta = [prefix(line), page.trial.run_id > 1 ? `run ${line.run_id}` : null].filter(Boolean).join(" · ");
    const text = h("span", { class: "log-text" });
    if (state.q) {
      const lower = line.text.toLowerCase();
      const needle = state.q.toLowerCase();
      let from = 0;
      for (let at = lower.indexOf(needle); at >= 0; at = lower.indexOf(needle, from)) {
        text.append(line.text.slice(from, at), h("mark", null, line.text.slice(at, at + needle.length)));
        from = at + needle.length;
      }
      text.append(line.text.slice(from));
    } else {
      text.textContent = line.text;
    }
    return h("div", { class: `log-line level-${level}`, title: fmt.time(line.time), dataset: { id: line.id } },
      meta ? h("span", { class: "log-meta" }, meta) : null, text);
  }

  function atBottom() {
    return view.scrollHeight - view.scrollTop - view.clientHeight < 40;
  }

  function appendLines(newLines) {
    const stick = follow.checked && atBottom();
    const shown = newLines.filter(matches);
    matching += shown.length;
    view.append(...shown.map(lineElement));
    while (view.childElementCount > SHOWN) view.firstElementChild?.remove();
    if (stick || (follow.checked && view.childElementCount === shown.length)) view.scrollTop = view.scrollHeight;
    showInfo();
  }

  function rerender() {
    const shown = lines.filter(matches);
    matching = shown.length;
    view.replaceChildren(...shown.slice(-SHOWN).map(lineElement));
    if (follow.checked) view.scrollTop = view.scrollHeight;
    showInfo();
  }

  function showInfo() {
    const parts = [`${fmt.integer(matching)} of ${fmt.integer(lines.length)} lines`];
    if (matching > SHOWN) parts.push(`the last ${fmt.integer(SHOWN)} shown; download for all`);
    parts.push(done ? "the trial has ended" : "following");
    info.textContent = parts.join(" · ");
    if (!lines.length && done) view.replaceChildren(h("p", { class: "muted", style: { padding: "0 12px" } }, "This trial printed nothing."));
  }

  let typing = 0;
  function setFilter(key, value) {
    state[key] = value;
    updateQuery({ [key]: value === "all" ? null : value });
    clearTimeout(typing);
    typing = setTimeout(rerender, key === "q" ? 150 : 0);
  }

  function setRank(value) {
    state.rank = value;
    updateQuery({ rank: value });
    restart();
  }

  function downloadLoaded() {
    const text = lines.map((l) => (prefix(l) ? `[${prefix(l)}] ` : "") + l.text).join("\n") + "\n";
    const url = URL.createObjectURL(new Blob([text], { type: "text/plain" }));
    const anchor = h("a", { href: url, download: `trial-${page.trial.id}${state.rank ? `-rank-${state.rank}` : ""}.log` });
    document.body.append(anchor);
    anchor.click();
    anchor.remove();
    setTimeout(() => URL.revokeObjectURL(url), 1000);
  }

  // One reading loop at a time: a new one (another rank) ends the one before.
  let generation = 0;
  async function readLoop() {
    const mine = ++generation;
    let caughtUp = false;
    while (mine === generation && !done) {
      controller = new AbortController();
      try {
        const result = await api.trialLogs(page.trial.id, {
          after: cursor,
          limit: PAGE,
          rank: state.rank === "" ? null : state.rank,
          wait_s: caughtUp ? WAIT_S : 0,
        }, controller.signal);
        if (mine !== generation) return;
        retryDelay = 1000;
        cursor = result.next_after;
        done = result.done;
        caughtUp = result.lines.length < PAGE;
        if (result.lines.length) {
          lines.push(...result.lines);
          let newRank = false;
          for (const l of result.lines) {
            if (ranks.has(l.rank)) continue;
            ranks.add(l.rank);
            newRank = true;
          }
          if (newRank) fillRanks();
          appendLines(result.lines);
        } else {
          showInfo();
        }
      } catch (error) {
        if (isAbort(error) || mine !== generation) return;
        info.textContent = `Cannot read the logs (${error instanceof Error ? error.message : error}); trying again in ${retryDelay / 1000} s`;
        await new Promise((resolve) => setTimeout(resolve, retryDelay));
        retryDelay = Math.min(30000, retryDelay * 2);
      }
    }
    if (mine === generation) showInfo();
  }

  function restart() {
    generation += 1;
    controller?.abort();
    lines = [];
    matching = 0;
    cursor = 0;
    done = false;
    view.replaceChildren();
    readLoop();
  }

  readLoop();
  return {
    update() {
      fillRanks();
    },
    destroy() {
      generation += 1;
      controller?.abort();
    },
  };
}
