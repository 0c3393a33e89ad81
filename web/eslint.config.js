// eslint for the web UI's modules (browser ES modules, served as they are) and for the
// node tests of their pure functions (`npm run lint`, run by `make test`).
import js from "@eslint/js";
import globals from "globals";

export default [
  { ignores: ["src/shipyard/server/web/static/vendor/", "web/node_modules/"] },
  js.configs.recommended,
  {
    rules: {
      // `const { a, ...rest } = x` leaves a out of rest on purpose.
      // `_name`: a parameter a subclass uses (an abstract method).
      "no-unused-vars": ["error", { ignoreRestSiblings: true, argsIgnorePattern: "^_" }],
      eqeqeq: ["error", "always", { null: "ignore" }],
      "prefer-const": "error",
      "no-var": "error",
    },
  },
  {
    files: ["src/shipyard/server/web/static/**/*.js"],
    languageOptions: {
      ecmaVersion: 2022,
      sourceType: "module",
      globals: { ...globals.browser, uPlot: "readonly" },
    },
  },
  {
    files: ["web/**/*.js"],
    languageOptions: { ecmaVersion: 2022, sourceType: "module", globals: globals.node },
  },
];
