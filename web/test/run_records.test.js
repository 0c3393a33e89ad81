// What a trial ran (the Environment tab) and what trials ran differently (the compare
// view): the pure parts of pages/trial_environment.js and pages/run_diff.js.
import assert from "node:assert/strict";
import { test } from "node:test";

import { categoryTitle, cut, diffRows, diffValue, missingNotes } from "../../src/shipyard/server/web/static/pages/run_diff.js";
import {
  diffNote,
  envRows,
  frameworkFacts,
  gpuSummary,
  normalizePackage,
  packageRows,
  sameAsFirst,
} from "../../src/shipyard/server/web/static/pages/trial_environment.js";

const PACKAGES = { PyYAML: "6.0.1", numpy: "1.26.4", "ruamel.yaml": "0.18.6", torch: "2.3.0+cu121", Zope_Interface: "6.4" };

test("packages by name, whatever the case; the filter matches as pip compares names", () => {
  assert.deepEqual(packageRows(PACKAGES).map(([name]) => name), ["numpy", "PyYAML", "ruamel.yaml", "torch", "Zope_Interface"]);
  assert.deepEqual(packageRows(PACKAGES, "yaml"), [["PyYAML", "6.0.1"], ["ruamel.yaml", "0.18.6"]]);
  assert.deepEqual(packageRows(PACKAGES, " pyyaml "), [["PyYAML", "6.0.1"]]);
  assert.deepEqual(packageRows(PACKAGES, "ruamel-yaml"), [["ruamel.yaml", "0.18.6"]]);
  assert.deepEqual(packageRows(PACKAGES, "zope-interface"), [["Zope_Interface", "6.4"]]);
  assert.deepEqual(packageRows(PACKAGES, "cu121"), [["torch", "2.3.0+cu121"]]); // a version too
  assert.deepEqual(packageRows(PACKAGES, "nothing-like-it"), []);
  assert.deepEqual(packageRows(null, "x"), []);
  assert.equal(normalizePackage("Ruamel__YAML.clib"), "ruamel-yaml-clib");
});

test("environment variables: kept with their value, hashed and redacted without", () => {
  const rows = envRows({
    kept: { NCCL_DEBUG: "INFO", CUDA_VISIBLE_DEVICES: "0,1" },
    hashed: { PATH: "sha256:ab12" },
    redacted: ["WANDB_API_KEY"],
  });
  assert.deepEqual(rows, [
    { name: "CUDA_VISIBLE_DEVICES", value: "0,1", kind: "kept" },
    { name: "NCCL_DEBUG", value: "INFO", kind: "kept" },
    { name: "PATH", value: "(hashed)", kind: "hashed" },
    { name: "WANDB_API_KEY", value: "(redacted)", kind: "redacted" },
  ]);
  assert.ok(!JSON.stringify(rows).includes("sha256")); // a hash is not shown as a value
  assert.deepEqual(envRows(undefined), []);
});

test("where the uncommitted diff is: inline, a blob, or only its hash", () => {
  assert.equal(diffNote(null).kind, "none");
  assert.equal(diffNote({ commit: "abc", dirty: false }).kind, "none");
  const inline = diffNote({ dirty: true, changed_files: 2, diff_bytes: 2048, diff: "--- a\n+++ b\n" });
  assert.deepEqual(inline, { kind: "inline", text: "The uncommitted changes (2 files changed, 2.0 KB)" });
  const blob = diffNote({ dirty: true, changed_files: 1, diff_bytes: 3 * 2 ** 20, diff_blob: "0123456789abcdef0123" });
  assert.equal(blob.kind, "blob");
  assert.match(blob.text, /1 file changed, 3\.0 MB\) is stored as blob 0123456789ab beside the code snapshot/);
  const dropped = diffNote({ dirty: true, changed_files: 40, diff_bytes: 2 ** 31, diff_sha256: "feed", diff_stored: false });
  assert.equal(dropped.kind, "not-stored");
  assert.match(dropped.text, /too large to store; only its hash and size are recorded: sha256 feed\.$/);
});

test("GPUs alike counted once, framework builds as facts", () => {
  const a100 = { name: "NVIDIA A100-SXM4-40GB", memory_mib: 40960 };
  assert.equal(gpuSummary([a100, a100, { name: "Tesla T4", memory_mib: 15360 }]), "2 × NVIDIA A100-SXM4-40GB (40,960 MiB); Tesla T4 (15,360 MiB)");
  assert.equal(gpuSummary([]), "");
  assert.deepEqual(frameworkFacts({ torch: { version: "2.3.0", cuda: "12.1", cudnn: 8902, nccl: "2.20.5", cpu_capability: "AVX2", debug: false } }), [
    ["PyTorch", "2.3.0"],
    ["CUDA (build)", "12.1"],
    ["cuDNN", "8902"],
    ["NCCL", "2.20.5"],
    ["CPU capability", "AVX2"],
  ]);
  assert.deepEqual(frameworkFacts({ torch: { version: "2.3.0", cuda: null, debug: true } }), [["PyTorch", "2.3.0"], ["Debug build", "yes"]]);
  assert.deepEqual(frameworkFacts({ jax: { version: "0.4.30", backend: "cpu" } }), [["jax", "version 0.4.30, backend cpu"]]);
  assert.deepEqual(frameworkFacts(undefined), []);
});

test("the ranks whose sections hash as the first rank's", () => {
  const hashes = { python: "sha256:1", packages: "sha256:2" };
  const ranks = [
    { rank: 0, received_at: "", record: { hashes } },
    { rank: 1, received_at: "", record: { hashes: { packages: "sha256:2", python: "sha256:1" } } },
    { rank: 2, received_at: "", record: { hashes: { ...hashes, packages: "sha256:3" } } },
    { rank: 3, received_at: "", record: {} },
  ];
  assert.deepEqual([...sameAsFirst(ranks)], [1]);
  assert.deepEqual([...sameAsFirst([{ rank: 0, received_at: "", record: {} }, ranks[1]])], []);
});

test("a difference's values shown exactly, long ones cut with the whole in the title", () => {
  assert.equal(diffValue(null), "—");
  assert.equal(diffValue(0.0100001), "0.0100001"); // not rounded to look like 0.01
  assert.equal(diffValue(false), "false");
  assert.equal(diffValue("2.3.0"), "2.3.0");
  assert.equal(diffValue({ a: [1, 2] }), '{"a":[1,2]}');
  assert.deepEqual(cut("short"), { text: "short", full: null });
  const long = "x".repeat(100);
  const shown = cut(long, 10);
  assert.equal(shown.text, "xxxxxxxxx…");
  assert.equal(shown.full, long);
  assert.equal([...cut("😀".repeat(12), 10).text].length, 10); // not in a surrogate pair
  assert.equal(categoryTitle("env"), "Environment variables");
  assert.equal(categoryTitle("something-new"), "something-new");
});

test("diffs into rows, each with the trial compared with the first; missing notes once", () => {
  const lr = { category: "hyperparameters", item: "lr", change: "changed", a: 0.1, b: 0.01 };
  const numpy = { category: "packages", item: "numpy", change: "added", a: null, b: "1.26.4" };
  const none = "the environment of trial 3's rank 0 (none captured)";
  const diffs = [
    { a: 3, b: 5, rank: 0, identical: false, differences: [lr, numpy], missing: [none] },
    { a: 3, b: 7, rank: 0, identical: false, differences: [], missing: [none] },
  ];
  assert.deepEqual(diffRows(diffs), [{ trial: 5, ...lr }, { trial: 5, ...numpy }]);
  assert.deepEqual(missingNotes(diffs), [none]);
  assert.deepEqual(diffRows([]), []);
});
