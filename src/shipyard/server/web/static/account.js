// @ts-check
// The top bar's account: who is logged in (the master's whoami) and the Log out button,
// which ends the session (the master revokes it and clears its cookies) and goes to the
// login page. A master without authentication (--no-auth) answers its local user: no
// session, so no Log out.

import { api } from "./api.js";
import { LOGIN_PATH } from "./auth.js";
import { h, replace } from "./dom.js";

let asked = false;
let wired = false;

// Once a page load, from the first page that needs a login (not the login page).
export function showAccount() {
  if (asked) return;
  asked = true;
  const account = document.getElementById("account");
  const button = /** @type {HTMLButtonElement | null} */ (document.getElementById("log-out"));
  if (!account || !button) return;
  if (!wired) {
    wired = true;
    button.addEventListener("click", () => logOut(button));
  }
  api.whoami().then(
    (me) => {
      const role = me.admin ? "a cluster admin" : me.service ? "a service account" : null;
      account.title = `Logged in as ${me.username}${role ? `, ${role}` : ""}${me.via === "local" ? " (the master runs without authentication)" : ""}`;
      replace(account, h("span", { class: "visually-hidden" }, "Logged in as "), me.username);
      account.hidden = false;
      button.hidden = me.via !== "session";
    },
    (error) => {
      asked = false; // the next page asks again (a 401 has gone to the login page already)
      console.warn("who is logged in:", (error instanceof Error && error.message) || error);
    },
  );
}

/** @param {HTMLButtonElement} button */
async function logOut(button) {
  button.disabled = true;
  try {
    await api.logout();
    location.replace(LOGIN_PATH);
  } catch (error) {
    button.disabled = false;
    button.textContent = "Log out failed: retry";
    button.title = String((error instanceof Error && error.message) || error);
  }
}
