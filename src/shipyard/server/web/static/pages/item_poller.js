// @ts-check
// The polling of a page about one experiment or trial: read it again and again, draw it
// when it changed, rest once it has ended (it changes no more unless the user acts: kick()
// wakes the poller). Until the first answer, or when the master says no (a 4xx, such as
// "trial 7 does not exist"), the error replaces the page's header.

import { h, replace, errorBox } from "../dom.js";
import { Poller } from "../poll.js";

// read(signal) -> the item; show(item, signal) draws it (awaited); ended(item) -> true when
// it has ended. Returns the started Poller; the page stops it when it is left.
export function pollItem({ read, show, ended, headerBox, min }) {
  let lastText = null;
  let done = false;
  const poller = new Poller(async (signal) => {
    const item = await read(signal);
    const text = JSON.stringify(item);
    if (text === lastText) {
      if (done) poller.pause();
      return false;
    }
    await show(item, signal);
    lastText = text; // once shown: a failed show is tried again with the next answer
    done = ended(item);
    return true;
  }, {
    min,
    max: 15000,
    onError: (error, final) => {
      if (lastText === null || final) replace(headerBox, errorBox(error), h("p", null, h("a", { href: "/" }, "Back to the experiments")));
    },
  });
  return poller.start(0);
}
