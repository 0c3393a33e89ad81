// How numbers, times and sizes read on the pages (static/format.js).
import assert from "node:assert/strict";
import { test } from "node:test";

import * as fmt from "../../src/shipyard/server/web/static/format.js";

test("metrics read in five significant digits, very large or small ones as exponents", () => {
  assert.equal(fmt.metric(0.123456789), "0.12346");
  assert.equal(fmt.metric(1234.5678), "1234.6");
  assert.equal(fmt.metric(0), "0");
  assert.equal(fmt.metric(123456), "1.235e+5");
  assert.equal(fmt.metric(0.0001234), "1.234e-4");
  assert.equal(fmt.metric(null), "—");
  assert.equal(fmt.metric(undefined), "—");
  assert.equal(fmt.metric("n/a"), "n/a");
});

test("axis labels are short", () => {
  assert.equal(fmt.short(0.123456), "0.123");
  assert.equal(fmt.short(1e-5), "1.0e-5");
  assert.equal(fmt.short("adam"), "adam");
});

test("hyperparameters read as written, objects as JSON", () => {
  assert.equal(fmt.hparam(0.001), "0.001");
  assert.equal(fmt.hparam("sgd"), "sgd");
  assert.equal(fmt.hparam(true), "true");
  assert.equal(fmt.hparam({ a: 1 }), '{"a":1}');
  assert.equal(fmt.hparam(null), "—");
});

test("integers have thousands separators", () => {
  assert.equal(fmt.integer(1234567), "1,234,567");
  assert.equal(fmt.integer(null), "—");
});

test("sizes in binary units", () => {
  assert.equal(fmt.bytes(512), "512 B");
  assert.equal(fmt.bytes(1536), "1.5 KB");
  assert.equal(fmt.bytes(5 * 1024 ** 3), "5.0 GB");
  assert.equal(fmt.bytes(null), "—");
});

test("durations in the two largest units", () => {
  assert.equal(fmt.seconds(42.4), "42s");
  assert.equal(fmt.seconds(125), "2m 5s");
  assert.equal(fmt.seconds(3 * 3600 + 120), "3h 2m");
  assert.equal(fmt.seconds(50 * 3600), "2d 2h");
  assert.equal(fmt.seconds(-3), "0s");
  assert.equal(fmt.seconds(Infinity), "—");
  assert.equal(fmt.seconds(null), "—");
});

test("the master's times are UTC, with or without a zone", () => {
  assert.equal(fmt.parseTime("2024-05-01T10:00:00"), Date.UTC(2024, 4, 1, 10));
  assert.equal(fmt.parseTime("2024-05-01T10:00:00Z"), Date.UTC(2024, 4, 1, 10));
  assert.equal(fmt.parseTime("2024-05-01T12:00:00+02:00"), Date.UTC(2024, 4, 1, 10));
  assert.equal(fmt.parseTime(null), null);
  assert.equal(fmt.durationSeconds("2024-05-01T10:00:00", "2024-05-01T10:01:30"), 90);
  assert.equal(fmt.duration("2024-05-01T10:00:00", "2024-05-01T11:00:30"), "1h 0m");
  assert.equal(fmt.durationSeconds(null, "2024-05-01T10:01:30"), null);
  assert.equal(fmt.time(null), "—");
});

test("percentages are clamped to 0..100", () => {
  assert.equal(fmt.percent(0.256), "26%");
  assert.equal(fmt.percent(1.7), "100%");
  assert.equal(fmt.percent(null), "0%");
});

test("metric series read the searcher's metric first, then validation before training", () => {
  const series = [
    { name: "loss", group: "training" },
    { name: "acc", group: "validation" },
    { name: "loss", group: "validation" },
    { name: "lr", group: "training" },
  ];
  const sorted = series.slice().sort(fmt.metricOrder("loss"));
  assert.deepEqual(sorted.map((s) => `${s.group}/${s.name}`), [
    "training/loss",
    "validation/loss",
    "validation/acc",
    "training/lr",
  ]);
});
