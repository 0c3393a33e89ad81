// The artifacts tab's pure parts: images grouped by step, tables read from their content.
import assert from "node:assert/strict";
import { test } from "node:test";

import { cellText, imagesByStep, parseCsv, tableOf } from "../../src/shipyard/server/web/static/pages/trial_artifacts.js";

const artifact = (id, name, step, kind = "image") => ({ id, name, steps_completed: step, kind });

test("images are grouped by step, the newest first, those of no step last", () => {
  const groups = imagesByStep([
    artifact(1, "b.png", 1),
    artifact(2, "a.png", 1),
    artifact(3, "a.png", 10),
    artifact(4, "cover.png", null),
    artifact(5, "notes", 10, "text"),
    artifact(6, "a.png", 2),
  ]);
  assert.deepEqual(groups.map((g) => g.step), [10, 2, 1, null]);
  assert.deepEqual(groups[2].images.map((a) => a.name), ["a.png", "b.png"]); // by name
  assert.deepEqual(groups[0].images.map((a) => a.id), [3]); // texts are not images
  assert.deepEqual(imagesByStep([artifact(7, "t", 1, "table")]), []);
});

test("CSV: quoted fields keep commas, quotes and line breaks", () => {
  assert.deepEqual(parseCsv('a,b\n1,"x, y"\n2,"say ""hi"""\r\n3,"two\nlines"\n'), [
    ["a", "b"],
    ["1", "x, y"],
    ["2", 'say "hi"'],
    ["3", "two\nlines"],
  ]);
  assert.deepEqual(parseCsv("a,b"), [["a", "b"]]);
  assert.deepEqual(parseCsv(""), []);
  assert.deepEqual(parseCsv("a,\n"), [["a", ""]]);
});

test("a table is read from log_table's JSON, a list of objects, or CSV", () => {
  const logged = JSON.stringify({ columns: ["epoch", "acc"], rows: [[1, 0.5], [2, null]] });
  assert.deepEqual(tableOf(logged, "application/json"), { columns: ["epoch", "acc"], rows: [[1, 0.5], [2, null]] });
  const records = JSON.stringify([{ a: 1 }, { a: 2, b: "x" }]);
  assert.deepEqual(tableOf(records, "application/json"), { columns: ["a", "b"], rows: [[1, undefined], [2, "x"]] });
  assert.deepEqual(tableOf("x,y\n1,2\n", "text/csv"), { columns: ["x", "y"], rows: [["1", "2"]] });
  assert.throws(() => tableOf("42", "application/json"), /not a table/);
});

test("cells show as text, a missing one as a dash", () => {
  assert.equal(cellText(null), "—");
  assert.equal(cellText(undefined), "—");
  assert.equal(cellText(0.25), "0.25");
  assert.equal(cellText({ a: 1 }), '{"a":1}');
});
