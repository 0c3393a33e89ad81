"""ctx.artifacts without a master: docs/core-api.md's example runs as printed and writes
./artifacts/<step>/<name>; bad arguments fail at the call, naming the artifact; a write that
fails is raised on leaving the `with` block; ranks other than the chief drop what they log.
(With a master: tests/e2e/test_artifacts.py.)"""

from __future__ import annotations

import base64
import json
import re
from pathlib import Path

import pytest

from shipyard.core.artifacts import DroppedArtifacts, LocalArtifacts
from tests.core.conftest import run_script

DOC = Path(__file__).resolve().parents[2] / "docs" / "core-api.md"
PNG = base64.b64decode(  # 1x1, as the docs' example
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGNQmHABAAJUAYFqPOxJAAAAAElFTkSuQmCC"
)


def doc_example() -> str:
    section = DOC.read_text().split("## `ctx.artifacts`", 1)[1]
    match = re.search(r"```python\n(.*?)```", section, re.DOTALL)
    assert match, "no example in the ctx.artifacts section"
    return match.group(1)


def test_the_docs_example_writes_each_artifact_under_its_step(tmp_path):
    result = run_script(tmp_path, doc_example())
    assert result.returncode == 0, result.stderr
    assert (
        "[shipyard] artifact 'samples.png' of step 1 (image, 69 bytes) stored at "
        "./artifacts/1/samples.png"
    ) in result.stdout.splitlines()
    root = tmp_path / "artifacts"
    stored = sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())
    assert stored == [
        "1/samples.png",
        "2/predictions",
        "2/samples.png",
        "none/confusion.csv",
        "none/notes",
    ]
    assert (root / "1" / "samples.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert json.loads((root / "2" / "predictions").read_text()) == {
        "columns": ["id", "label"],
        "rows": [[1, "cat"], [2, "dog"]],
    }


@pytest.fixture
def artifacts(tmp_path):
    made = LocalArtifacts(tmp_path / "artifacts")
    yield made
    made.close()


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda a: a.log_text("a/b", "x"), ValueError, "artifact name 'a/b' is not valid"),
        (lambda a: a.log_text(".hidden", "x"), ValueError, "is not valid"),
        (lambda a: a.log_text("n\n", "x"), ValueError, "is not valid"),
        (lambda a: a.log_text(3, "x"), TypeError, "artifact name must be a string"),
        (lambda a: a.log_text("n", b"x"), TypeError, "text must be a str"),
        (lambda a: a.log_text("n", "x", steps_completed=-1), ValueError, "int >= 0"),
        (lambda a: a.log_text("n", "x", steps_completed=True), TypeError, "int >= 0"),
        (lambda a: a.log_image("n", b"GIF8 no"), ValueError, "not a PNG, JPEG, GIF or WebP"),
        (lambda a: a.log_image("n", 3.5), TypeError, "log_image takes PNG"),
        (lambda a: a.log_table("n", {"a": 1}), TypeError, "rows must be a list"),
        (lambda a: a.log_table("n", [[1, 2]]), TypeError, "need columns="),
        (lambda a: a.log_table("n", [[1]], columns=["a", "b"]), ValueError, "1 cells for 2"),
        (lambda a: a.log_file("missing.txt"), FileNotFoundError, "missing.txt"),
        (lambda a: a.log_file(".", name="d"), ValueError, "not a file"),
        (lambda a: a.log_text("n", "x" * 11), ValueError, "11 bytes, over the limit of 10"),
    ],
)
def test_a_bad_argument_fails_at_the_call(monkeypatch, tmp_path, call, error, message):
    monkeypatch.setenv("SHIPYARD_ARTIFACT_MAX_BYTES", "10")
    monkeypatch.chdir(tmp_path)
    for made in (LocalArtifacts(tmp_path / "artifacts"), DroppedArtifacts()):
        with pytest.raises(error, match=re.escape(message)):
            call(made)
        made.close()
    assert not (tmp_path / "artifacts").exists()


def test_a_file_is_copied_at_the_call_and_its_kind_read_from_its_bytes(artifacts, tmp_path):
    source = tmp_path / "plot"
    source.write_bytes(PNG)
    key = artifacts.log_file(source, steps_completed=5)
    source.write_bytes(b"overwritten at once")  # the copy was taken at the call
    (tmp_path / "table.csv").write_text("a,b\n1,2\n")
    artifacts.log_file(tmp_path / "table.csv", kind="table")
    (tmp_path / "page.html").write_text("<script></script>")
    artifacts.log_file(tmp_path / "page.html")
    with pytest.raises(ValueError, match="must be a .csv or .json file"):
        artifacts.log_file(tmp_path / "page.html", kind="table")
    with pytest.raises(ValueError, match="not a PNG"):
        artifacts.log_file(tmp_path / "page.html", kind="image")
    artifacts.flush()
    assert Path(key) == tmp_path / "artifacts" / "5" / "plot"
    assert Path(key).read_bytes() == PNG
    assert (tmp_path / "artifacts" / "none" / "table.csv").read_text() == "a,b\n1,2\n"


def test_tables_keep_their_columns_and_json_safe_cells(artifacts, tmp_path):
    artifacts.log_table("t", [{"a": 1, "b": float("nan")}, {"c": 2.5, "a": None}])
    artifacts.log_table("u", [(1, "x"), [2, float("inf")]], steps_completed=3, columns=["n", "s"])
    artifacts.flush()
    root = tmp_path / "artifacts"
    assert json.loads((root / "none" / "t").read_text()) == {
        "columns": ["a", "b", "c"],
        "rows": [[1, "nan", None], [None, None, 2.5]],
    }
    assert json.loads((root / "3" / "u").read_text())["rows"] == [[1, "x"], [2, "inf"]]


def test_a_write_that_fails_is_raised_on_leaving_the_block(tmp_path):
    (tmp_path / "artifacts").write_text("a file where the directory would be")
    script = "import shipyard.core\nwith shipyard.core.init() as ctx:\n"
    script += "    ctx.artifacts.log_text('notes', 'hello', steps_completed=1)\n"
    result = run_script(tmp_path, script)
    assert result.returncode == 1
    assert "CheckpointWriteError: cannot write artifact 'notes' of step 1 to" in result.stderr


def test_a_failure_is_raised_once_by_the_next_call(tmp_path):
    (tmp_path / "blocked").write_text("not a directory")
    made = LocalArtifacts(tmp_path / "blocked")
    made.log_text("first", "x")
    with pytest.raises(OSError, match="cannot write artifact 'first'"):
        made.flush()
    made.flush()  # raised once
    made.close()
    with pytest.raises(Exception, match="context is closed"):
        made.log_text("late", "x")


def test_ranks_other_than_the_chief_check_and_drop(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    dropped = DroppedArtifacts()
    assert dropped.log_image("img", PNG, steps_completed=1) == ""
    assert dropped.log_table("t", [{"a": 1}]) == ""
    dropped.close()
    assert list(tmp_path.iterdir()) == []
