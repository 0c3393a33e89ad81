// Live updates without reloading: a task runs again and again, soon after it found
// something new, less and less often while nothing changes or the master does not answer,
// not at all while the tab is hidden. A page stops its pollers when it is left.

import { isAbort } from "./api.js";

const status = () => document.getElementById("live-status");

function showStatus(text, tone) {
  const el = status();
  if (!el) return;
  el.textContent = text;
  el.dataset.tone = tone || "";
}

export class Poller {
  // task(signal) -> true when it found something new (poll soon again), false otherwise.
  constructor(task, { min = 1000, max = 15000, factor = 1.5 } = {}) {
    this.task = task;
    this.min = min;
    this.max = max;
    this.factor = factor;
    this.delay = min;
    this.timer = null;
    this.controller = null;
    this.stopped = true;
    this.onVisibility = () => {
      if (!document.hidden && !this.stopped && !this.controller) this.runSoon(0);
    };
  }

  start(firstDelay = this.min) {
    this.stopped = false;
    document.addEventListener("visibilitychange", this.onVisibility);
    this.runSoon(firstDelay);
    return this;
  }

  stop() {
    this.stopped = true;
    clearTimeout(this.timer);
    this.controller?.abort();
    this.controller = null;
    document.removeEventListener("visibilitychange", this.onVisibility);
  }

  // Run now (e.g. after the user acted), then go on with the short delay; also starts a
  // poller that stopped because nothing was left to change.
  kick() {
    this.delay = this.min;
    if (this.stopped) this.start(0);
    else if (!this.controller) this.runSoon(0);
  }

  runSoon(delay) {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.run(), delay);
  }

  async run() {
    if (this.stopped) return;
    if (document.hidden) return; // onVisibility starts it again
    this.controller = new AbortController();
    try {
      const changed = await this.task(this.controller.signal);
      this.delay = changed ? this.min : Math.min(this.max, this.delay * this.factor);
      showStatus("Live", "live");
    } catch (error) {
      if (isAbort(error) || this.stopped) return;
      this.delay = Math.min(this.max * 2, Math.max(this.min, this.delay) * 2);
      showStatus(`Master not answering; retrying in ${Math.round(this.delay / 1000)} s`, "bad");
      console.warn("polling failed:", error.message || error);
    } finally {
      this.controller = null;
    }
    // A task that knows nothing will change again (the trial ended) stops its poller.
    if (!this.stopped) this.runSoon(this.delay);
  }
}

export function showIdle() {
  showStatus("", "");
}
