// @ts-check
// The web UI's entry point: which page a URL shows, the top bar, the theme.
//
// A page module exports mount(root, params) -> unmount(); it reads its query string
// itself (router.query()) and stops its requests and pollers on unmount.

import { h, emptyState, replace } from "./dom.js";
import { interceptLinks, setRenderer } from "./router.js";
import { setupThemeToggle } from "./theme.js";
import { showIdle } from "./poll.js";
import { showAccount } from "./account.js";
import * as loginPage from "./pages/login.js";
import * as experimentsPage from "./pages/experiments.js";
import * as experimentPage from "./pages/experiment.js";
import * as trialPage from "./pages/trial.js";
import * as clusterPage from "./pages/cluster.js";
import * as modelsPage from "./pages/models.js";

const ROUTES = [
  { pattern: /^\/$/, page: experimentsPage, nav: "experiments" },
  { pattern: /^\/experiments\/(\d+)\/?$/, page: experimentPage, nav: "experiments" },
  { pattern: /^\/trials\/(\d+)\/?$/, page: trialPage, nav: "experiments" },
  { pattern: /^\/cluster\/?$/, page: clusterPage, nav: "cluster" },
  // The list and one model (its name read by the page: it is no number).
  { pattern: /^\/models(\/[^/]+)?\/?$/, page: modelsPage, nav: "models" },
  // The only page shown without a login (the top bar then has no links: they need one).
  { pattern: /^\/login\/?$/, page: loginPage, nav: null },
];

const notFound = {
  mount(root) {
    document.title = "Not found · Shipyard";
    replace(
      root,
      emptyState("There is no page here", "The experiments list has links to every experiment and trial."),
      h("p", null, h("a", { href: "/" }, "Go to the experiments")),
    );
    return () => {};
  },
};

/** @typedef {{mount(root: HTMLElement, params: {id: number | null}): () => void}} Page */

const main = () => /** @type {HTMLElement} */ (document.getElementById("main"));
/** @type {(() => void) | null} */
let unmount = null;
/** @type {string | null} */
let shownPath = null;

function render() {
  if (unmount) unmount();
  unmount = null;
  showIdle();
  const path = location.pathname;
  const route = ROUTES.find((r) => r.pattern.test(path));
  for (const anchor of /** @type {NodeListOf<HTMLElement>} */ (document.querySelectorAll("[data-nav]"))) {
    if (route && anchor.dataset.nav === route.nav) anchor.setAttribute("aria-current", "page");
    else anchor.removeAttribute("aria-current");
  }
  const login = route?.page === loginPage;
  document.body.classList.toggle("login-page", login);
  if (!login) showAccount();
  const root = main();
  root.replaceChildren();
  const id = route ? Number(path.match(route.pattern)?.[1]) : null;
  /** @type {Page} */
  const page = route ? route.page : notFound;
  unmount = page.mount(root, { id });
  // A new page (not a new query on the same page): bring the reader to its top.
  if (shownPath !== null && shownPath !== path) {
    window.scrollTo(0, 0);
    root.focus({ preventScroll: true });
  }
  shownPath = path;
}

setRenderer(render);
interceptLinks(document);
setupThemeToggle(render);
render();
