// @ts-check
// Live updates without reloading: a task runs again and again, soon after it found
// something new, less and less often while nothing changes or the master does not answer,
// not at all while the tab is hidden. A page starts its pollers with start(0) (the first
// load is a run like the others) and stops them when it is left: a stopped poller never
// runs again, and the run it aborted starts nothing.

import { ApiError, isAbort } from "./api.js";
import { toLogin } from "./auth.js";

const status = () => document.getElementById("live-status");

/**
 * @param {string} text
 * @param {string} [tone]
 */
function showStatus(text, tone) {
  const el = status();
  if (!el) return;
  el.textContent = text;
  el.dataset.tone = tone || "";
}

// The master said no (no such experiment, not logged in): asking again gets the same
// answer. 408 and 429 say "later", not "no".
/** @param {unknown} error */
function isFinal(error) {
  return error instanceof ApiError && error.status >= 400 && error.status < 500 && error.status !== 408 && error.status !== 429;
}

export class Poller {
  // task(signal) -> true when it found something new (poll soon again), false otherwise.
  // onError(error, final): a run failed (final: a 4xx answer, which stops the poller).
  // status: false keeps its failures off the page's live status (a side section's poller).
  /**
   * @param {(signal: AbortSignal) => Promise<boolean>} task
   * @param {{min?: number, max?: number, factor?: number, status?: boolean,
   *          onError?: (error: unknown, final: boolean) => void}} [options]
   */
  constructor(task, { min = 1000, max = 15000, factor = 1.5, onError, status = true } = {}) {
    this.task = task;
    this.min = min;
    this.max = max;
    this.factor = factor;
    this.onError = onError;
    this.status = status;
    this.delay = min;
    /** @type {ReturnType<typeof setTimeout> | undefined} */
    this.timer = undefined;
    /** @type {AbortController | null} */
    this.controller = null;
    this.stopped = false;
    this.paused = true; // until start()
    this.again = false;
    this.onVisibility = () => {
      if (!document.hidden && !this.paused && !this.controller) this.runSoon(0);
    };
  }

  /** @param {number} [firstDelay] ms */
  start(firstDelay = this.min) {
    if (this.stopped) return this;
    this.paused = false;
    document.addEventListener("visibilitychange", this.onVisibility);
    this.runSoon(firstDelay);
    return this;
  }

  // For good: the page was left. The run under way is aborted.
  stop() {
    this.stopped = this.paused = true;
    clearTimeout(this.timer);
    this.controller?.abort();
    this.controller = null;
    document.removeEventListener("visibilitychange", this.onVisibility);
  }

  // Until kick(): nothing changes unless the user acts (the experiment has ended).
  pause() {
    this.paused = true;
    clearTimeout(this.timer);
  }

  // Run now (e.g. after the user acted), then go on with the short delay; also wakes a
  // paused poller. A run under way may predate what the user did: one more follows it.
  kick() {
    if (this.stopped) return;
    this.paused = false;
    this.delay = this.min;
    if (this.controller) this.again = true;
    else this.runSoon(0);
  }

  /** @param {number} delay ms */
  runSoon(delay) {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.run(), delay);
  }

  async run() {
    if (this.paused || this.controller) return;
    if (document.hidden) return; // onVisibility starts it again
    const controller = (this.controller = new AbortController());
    try {
      const changed = await this.task(controller.signal);
      if (this.stopped) return;
      this.delay = changed ? this.min : Math.min(this.max, this.delay * this.factor);
      if (this.status) showStatus("Live", "live");
    } catch (error) {
      if (isAbort(error) || this.stopped) return;
      const final = isFinal(error);
      if (final) {
        this.stop(); // the page's error box says what the master said
        if (this.status) showIdle();
        // Logged out (or the session ended): asking again gets 401 again; the login page
        // brings the browser back here (api.js has already gone there: once is enough).
        if (error instanceof ApiError && error.status === 401) toLogin();
      } else {
        this.delay = Math.min(this.max * 2, Math.max(this.min, this.delay) * 2);
        if (this.status) showStatus(`Master not answering; retrying in ${Math.round(this.delay / 1000)} s`, "bad");
        console.warn("polling failed:", (error instanceof Error && error.message) || error);
      }
      this.onError?.(error, final);
    } finally {
      if (this.controller === controller) this.controller = null;
    }
    if (this.again && !this.stopped) this.paused = false;
    if (!this.paused) this.runSoon(this.again ? 0 : this.delay);
    this.again = false;
  }
}

export function showIdle() {
  showStatus("", "");
}
