// @ts-check
// Who the browser is logged in as, in the master's terms: a session cookie (HttpOnly: no
// script reads it) and a CSRF token in a cookie this script reads and sends back in a
// header on every write (the master refuses a write made with the cookie but without it,
// which another site's page cannot send). An answer 401 means no session, or an ended
// one: the browser goes to the login page, which comes back to where it was.

export const CSRF_COOKIE = "shipyard_csrf";
export const CSRF_HEADER = "X-CSRF-Token";
export const LOGIN_PATH = "/login";

// A cookie's value in a document.cookie string ("a=1; b=2"), "" when absent.
/**
 * @param {string} cookies
 * @param {string} name
 */
export function cookieValue(cookies, name) {
  for (const part of cookies.split(";")) {
    const eq = part.indexOf("=");
    if (eq >= 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return "";
}

// The CSRF token to send with a write ("" when the browser has no session).
export function csrfToken() {
  return cookieValue(globalThis.document?.cookie ?? "", CSRF_COOKIE);
}

// Where the login page may send the browser afterwards: a path of this site ("/cluster",
// "/experiments/3?tab=trials"), never another site ("https://x", "//x", "/\x", which a
// browser reads as "//x") nor the login page itself; "/" otherwise.
/**
 * @param {string | null | undefined} next
 * @param {string} origin this site's, e.g. location.origin
 */
export function safeNext(next, origin) {
  if (typeof next !== "string" || !next.startsWith("/") || next.startsWith("//") || next.startsWith("/\\")) return "/";
  let url;
  try {
    url = new URL(next, origin);
  } catch {
    return "/";
  }
  // The URL parser drops tabs and newlines and reads "\" as "/": check what it made of it.
  const path = url.pathname + url.search + url.hash;
  if (url.origin !== origin || path.startsWith("//") || url.pathname === LOGIN_PATH) return "/";
  return path;
}

// The login page that comes back to `here` (a path and query) afterwards.
/** @param {string} here */
export function loginHref(here) {
  return here && here !== "/" ? `${LOGIN_PATH}?next=${encodeURIComponent(here)}` : LOGIN_PATH;
}

let leaving = false;

// To the login page, once (several requests may be refused at once), and not from the login
// page itself (a wrong password is a 401 too). replace(): Back does not return to the page
// that was refused.
/** @param {Pick<Location, "pathname" | "search" | "replace">} [where] */
export function toLogin(where = location) {
  if (leaving || where.pathname === LOGIN_PATH) return;
  leaving = true;
  where.replace(loginHref(where.pathname + where.search));
}
