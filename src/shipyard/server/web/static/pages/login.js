// @ts-check
// The login page (/login): a username and password form that gets the browser its session
// cookie, then goes on to the page that sent it here (?next=, a path of this site only) or
// to the experiments. The link `shipyard up` prints (/login?ticket=...) logs in without it:
// the master redeems the ticket and never shows this page, unless the ticket has expired or
// was used (?expired=1).

import { ApiError, api } from "../api.js";
import { safeNext } from "../auth.js";
import { h, replace, errorBox } from "../dom.js";
import { query } from "../router.js";

const EXPIRED = "The login link has expired or was used";

/** @param {unknown} error */
function failure(error) {
  if (error instanceof ApiError) return error.reason; // "wrong username or password", 429's wait
  return `The master does not answer (${error instanceof Error ? error.message : String(error)})`;
}

/**
 * @param {string} id
 * @param {string} text
 * @param {HTMLInputElement} input
 */
function field(id, text, input) {
  input.id = id;
  return h("div", { class: "form-field" }, h("label", { for: id }, text), input);
}

/** @param {HTMLElement} root */
export function mount(root) {
  document.title = "Log in · Shipyard";
  const params = query();
  let left = false;
  const username = h("input", {
    type: "text",
    name: "username",
    autocomplete: "username",
    autocapitalize: "none",
    spellcheck: "false",
    required: true,
  });
  const password = h("input", { type: "password", name: "password", autocomplete: "current-password", required: true });
  const submit = h("button", { type: "submit", class: "button primary" }, "Log in");
  const message = h("div", { class: "form-message" });
  const form = h(
    "form",
    { class: "login-form", "aria-labelledby": "login-title" },
    field("login-username", "Username", username),
    field("login-password", "Password", password),
    message,
    submit,
  );
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    submit.disabled = true;
    message.replaceChildren();
    try {
      await api.login(username.value, password.value);
      if (left) return;
      // A new page load: the top bar asks who is logged in, every page starts afresh.
      location.replace(safeNext(params.get("next"), location.origin));
    } catch (error) {
      if (left) return;
      submit.disabled = false;
      replace(message, errorBox(failure(error)));
      password.select();
      password.focus();
    }
  });
  replace(
    root,
    h(
      "section",
      { class: "login card" },
      h("h1", { id: "login-title" }, "Log in to Shipyard"),
      params.get("expired")
        ? h("div", { class: "notice", role: "status" },
          h("strong", null, `${EXPIRED}.`), " Log in with your password, or open a new link (",
          h("code", null, "shipyard up"), " prints one).")
        : null,
      form,
    ),
  );
  username.focus();
  return () => {
    left = true;
  };
}
