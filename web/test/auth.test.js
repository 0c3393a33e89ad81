// The browser's credentials (static/auth.js): the CSRF cookie read from document.cookie,
// where the login page may go afterwards (this site only), and the way to the login page.
import assert from "node:assert/strict";
import { test } from "node:test";

import { cookieValue, loginHref, safeNext, toLogin } from "../../src/shipyard/server/web/static/auth.js";

const ORIGIN = "http://127.0.0.1:8080";

test("a cookie's value is read from document.cookie", () => {
  const cookies = "shipyard-theme=dark; shipyard_csrf=a1-B_2; x_shipyard_csrf=no";
  assert.equal(cookieValue(cookies, "shipyard_csrf"), "a1-B_2");
  assert.equal(cookieValue("shipyard_csrf=only", "shipyard_csrf"), "only");
  assert.equal(cookieValue("a=1;shipyard_csrf=tight", "shipyard_csrf"), "tight");
  assert.equal(cookieValue("x_shipyard_csrf=no", "shipyard_csrf"), "");
  assert.equal(cookieValue("", "shipyard_csrf"), "");
  assert.equal(cookieValue("shipyard_csrf", "shipyard_csrf"), ""); // no "=": no value
});

test("after logging in, a path of this site, as it was", () => {
  assert.equal(safeNext("/cluster", ORIGIN), "/cluster");
  assert.equal(safeNext("/experiments/3?tab=trials&compare=1,2", ORIGIN), "/experiments/3?tab=trials&compare=1,2");
  assert.equal(safeNext("/trials/7#logs", ORIGIN), "/trials/7#logs");
});

test("after logging in, never another site: the experiments instead", () => {
  for (const next of [
    null,
    undefined,
    "",
    "cluster",
    "https://evil.example/",
    "http://127.0.0.1:8080/cluster", // absolute: even this site's is refused
    "//evil.example/x",
    "/\\evil.example/x",
    "/\t/evil.example/x", // the URL parser drops the tab: "//evil.example/x"
    "/\n/evil.example",
    "/.//evil.example", // normalised to the path "//evil.example"
    "javascript:alert(1)",
    " /cluster",
  ]) {
    assert.equal(safeNext(next, ORIGIN), "/", JSON.stringify(next));
  }
});

test("after logging in, not the login page again", () => {
  assert.equal(safeNext("/login", ORIGIN), "/");
  assert.equal(safeNext("/login?next=/login", ORIGIN), "/");
});

test("the login page comes back to where the browser was", () => {
  assert.equal(loginHref("/"), "/login");
  assert.equal(loginHref("/cluster"), "/login?next=%2Fcluster");
  assert.equal(loginHref("/experiments/3?tab=trials"), "/login?next=%2Fexperiments%2F3%3Ftab%3Dtrials");
  assert.equal(safeNext(new URLSearchParams(loginHref("/trials/7?tab=logs").split("?")[1]).get("next"), ORIGIN), "/trials/7?tab=logs");
});

test("the login page does not send the browser to itself", () => {
  const went = [];
  toLogin({ pathname: "/login", search: "?next=%2F", replace: (href) => went.push(href) });
  assert.deepEqual(went, []);
});
