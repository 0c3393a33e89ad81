// @ts-check
// Light and dark: the system's choice (prefers-color-scheme) unless the user picked one
// with the toggle; the pick is kept in localStorage. Charts read their colours from the
// CSS variables, so a change re-renders the page.

const KEY = "shipyard-theme";
const ORDER = ["system", "light", "dark"];

function saved() {
  try {
    return localStorage.getItem(KEY) || "system";
  } catch {
    return "system";
  }
}

const systemDark = window.matchMedia("(prefers-color-scheme: dark)");

// data-theme is always "light" or "dark" (style.css has one dark rule): "system" is
// resolved here.
/** @param {string} choice "system", "light" or "dark" */
function apply(choice) {
  const dark = choice === "dark" || (choice === "system" && systemDark.matches);
  document.documentElement.dataset.theme = dark ? "dark" : "light";
  const button = document.getElementById("theme-toggle");
  if (button) {
    button.textContent = `Theme: ${choice}`;
    button.setAttribute("aria-label", `Theme: ${choice} (change)`);
  }
}

/** @param {() => void} onChange */
export function setupThemeToggle(onChange) {
  let choice = saved();
  apply(choice);
  document.getElementById("theme-toggle")?.addEventListener("click", () => {
    const next = ORDER[(ORDER.indexOf(choice) + 1) % ORDER.length];
    choice = next;
    try {
      localStorage.setItem(KEY, next);
    } catch {
      /* storage disabled: the choice lasts until the page is reloaded */
    }
    apply(next);
    onChange();
  });
  systemDark.addEventListener("change", () => {
    if (choice !== "system") return;
    apply(choice);
    onChange();
  });
}

// A colour of the current theme, e.g. cssVar("--text").
/** @param {string} name */
export function cssVar(name) {
  return getComputedStyle(document.documentElement).getPropertyValue(name).trim();
}
