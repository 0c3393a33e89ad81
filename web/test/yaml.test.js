// A config as YAML, the way a person would write it (static/yaml.js).
import assert from "node:assert/strict";
import { test } from "node:test";

import { toYaml } from "../../src/shipyard/server/web/static/yaml.js";

test("nested mappings and lists are blocks, empty ones and scalars inline", () => {
  const config = {
    name: "mnist",
    entrypoint: "python3 train.py",
    hyperparameters: { lr: { type: "log", minval: -4, maxval: -1 }, layers: [64, 32] },
    searcher: { name: "asha", smaller_is_better: true },
    bind_mounts: [],
    environment: {},
    labels: ["a", "b"],
    workers: [{ host: "n1", slots: 2 }],
    description: null,
  };
  assert.equal(
    toYaml(config),
    [
      "name: mnist",
      "entrypoint: python3 train.py",
      "hyperparameters:",
      "  lr:",
      "    type: log",
      "    minval: -4",
      "    maxval: -1",
      "  layers:",
      "    - 64",
      "    - 32",
      "searcher:",
      "  name: asha",
      "  smaller_is_better: true",
      "bind_mounts: []",
      "environment: {}",
      "labels:",
      "  - a",
      "  - b",
      "workers:",
      "  - host: n1",
      "    slots: 2",
      "description: null",
      "",
    ].join("\n"),
  );
});

test("strings YAML would read as something else are quoted", () => {
  assert.equal(toYaml({ a: "true", b: "no", c: "", d: "x: y", e: "1.5", f: "a #b", g: "tail " }), [
    'a: "true"',
    'b: "no"',
    'c: ""',
    'd: "x: y"',
    'e: "1.5"',
    'f: "a #b"',
    'g: "tail "',
    "",
  ].join("\n"));
});

test("a scalar is one line", () => {
  assert.equal(toYaml(3), "3\n");
  assert.equal(toYaml(null), "null\n");
  assert.equal(toYaml("plain"), "plain\n");
});
