// @ts-check
// A config (JSON from the API) as YAML, the way a person would write it.

const PLAIN = /^[A-Za-z_./][\w./ -]*$/;
const SPECIAL = new Set(["true", "false", "null", "yes", "no", "on", "off", "~", ""]);

/** @param {unknown} value */
function scalar(value) {
  if (value === null || value === undefined) return "null";
  if (typeof value === "number" || typeof value === "boolean") return String(value);
  const text = String(value);
  const plain = PLAIN.test(text) && !SPECIAL.has(text.toLowerCase()) && !text.endsWith(" ") && !text.includes(": ") && !text.includes(" #");
  return plain ? text : JSON.stringify(text);
}

/** @param {unknown} value */
function isEmpty(value) {
  return Array.isArray(value) ? value.length === 0 : value && typeof value === "object" && Object.keys(value).length === 0;
}

/**
 * @param {object} value an array or an object, not empty
 * @param {number} indent
 * @returns {string}
 */
function block(value, indent) {
  const pad = "  ".repeat(indent);
  if (Array.isArray(value)) {
    return value
      .map((item) => {
        if (item && typeof item === "object" && !isEmpty(item)) {
          const inner = block(item, indent + 1).trimStart();
          return `${pad}- ${inner}`;
        }
        return `${pad}- ${inline(item)}`;
      })
      .join("\n");
  }
  return Object.entries(value)
    .map(([key, item]) => {
      const name = scalar(key);
      if (item && typeof item === "object" && !isEmpty(item)) return `${pad}${name}:\n${block(item, indent + 1)}`;
      return `${pad}${name}: ${inline(item)}`;
    })
    .join("\n");
}

/**
 * @param {unknown} value
 * @returns {string}
 */
function inline(value) {
  if (Array.isArray(value)) return value.length ? `[${value.map(inline).join(", ")}]` : "[]";
  if (value && typeof value === "object") return "{}";
  return scalar(value);
}

/** @param {unknown} value */
export function toYaml(value) {
  if (value === null || typeof value !== "object") return scalar(value) + "\n";
  return block(value, 0) + "\n";
}
