// @ts-check
// Client-side navigation: every page and every filter has a URL (location.pathname and
// the query string), changed with history.pushState / replaceState, never a reload.

/** @type {() => void} */
let renderRoute = () => {};

/** @param {() => void} render */
export function setRenderer(render) {
  renderRoute = render;
}

/**
 * @param {string} href
 * @param {{replace?: boolean}} [options]
 */
export function navigate(href, { replace = false } = {}) {
  if (replace) history.replaceState(null, "", href);
  else history.pushState(null, "", href);
  renderRoute();
}

export function query() {
  return new URLSearchParams(location.search);
}

// Change some query parameters of the current page without rendering it again (the page
// has already shown the change); a null or empty value removes the parameter. `push` makes
// a history entry (tabs), otherwise it is replaced (typing in a filter).
/**
 * @param {Record<string, string | number | boolean | null | undefined>} patch
 * @param {{push?: boolean}} [options]
 */
export function updateQuery(patch, { push = false } = {}) {
  const params = query();
  for (const [key, value] of Object.entries(patch)) {
    if (value === null || value === undefined || value === "" || value === false) params.delete(key);
    else params.set(key, String(value));
  }
  const qs = params.toString();
  const href = location.pathname + (qs ? "?" + qs : "");
  if (href === location.pathname + location.search) return;
  if (push) history.pushState(null, "", href);
  else history.replaceState(null, "", href);
}

// Links inside the app navigate without a reload (a modified click still opens a tab).
/** @param {Document | Element} root */
export function interceptLinks(root) {
  root.addEventListener("click", (event) => {
    if (!(event instanceof MouseEvent) || !(event.target instanceof Element)) return;
    if (event.defaultPrevented || event.button !== 0) return;
    if (event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
    const anchor = event.target.closest("a[href]");
    if (!(anchor instanceof HTMLAnchorElement) || anchor.target || anchor.hasAttribute("download")) return;
    const href = anchor.getAttribute("href") || "";
    if (!href.startsWith("/") || href.startsWith("/api/") || href.startsWith("/static/")) return;
    event.preventDefault();
    navigate(href);
  });
  window.addEventListener("popstate", () => renderRoute());
}
