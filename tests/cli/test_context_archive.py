"""The context archive: which files go in (.shipyardignore), and the size limit."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

import pytest

from shipyard.client.contexts import build_context
from shipyard.client.ignore import IgnoreRules
from shipyard.common.errors import InvalidRequest, TooLarge


def write(root: Path, relative: str, content: str | bytes = "x") -> None:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content)


def archive_members(data: bytes) -> dict[str, bytes]:
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        return {m.name: tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()}


def test_ignore_file_rules_and_always_skipped_dirs(tmp_path):
    write(
        tmp_path,
        ".shipyardignore",
        "# data and outputs stay home\ndata/\n*.ckpt\n!keep.ckpt\n**/scratch\n/notes.txt\n",
    )
    for name in (
        "train.py",
        "pkg/model.py",
        "data/train.csv",
        "pkg/data/nested.csv",  # `data/` matches a directory at any depth
        "model.ckpt",
        "pkg/old.ckpt",
        "keep.ckpt",  # re-included by `!keep.ckpt`
        "a/b/scratch/tmp.txt",
        "notes.txt",  # anchored: only the top-level one is ignored
        "pkg/notes.txt",
        ".git/config",
        "__pycache__/train.cpython-311.pyc",
        "pkg/__pycache__/model.cpython-311.pyc",
    ):
        write(tmp_path, name, f"content of {name}")

    archive = build_context(tmp_path)

    expected = {".shipyardignore", "train.py", "pkg/model.py", "keep.ckpt", "pkg/notes.txt"}
    assert archive.files == expected
    members = archive_members(archive.data)
    assert set(members) == expected
    assert members["train.py"] == b"content of train.py"


def test_directory_only_pattern_keeps_a_file_of_that_name():
    rules = IgnoreRules.from_text("build/\n")
    assert rules.is_ignored("build", is_dir=True)
    assert rules.is_ignored("src/build", is_dir=True)
    assert not rules.is_ignored("build", is_dir=False)


def test_star_stays_within_one_directory_and_double_star_spans_many():
    rules = IgnoreRules.from_text("logs/*.txt\nruns/**\n")
    assert rules.is_ignored("logs/a.txt", is_dir=False)
    assert not rules.is_ignored("logs/deep/a.txt", is_dir=False)
    assert rules.is_ignored("runs/1/2/out.bin", is_dir=False)
    assert not rules.is_ignored("other/runs/x", is_dir=False)


def test_same_files_give_the_same_archive(tmp_path):
    write(tmp_path, "train.py", "print(1)")
    write(tmp_path, "lib/util.py", "X = 1")
    assert build_context(tmp_path).data == build_context(tmp_path).data


def test_executable_bit_survives(tmp_path):
    write(tmp_path, "run.sh", "#!/bin/sh\necho hi\n")
    (tmp_path / "run.sh").chmod(0o755)
    with tarfile.open(fileobj=io.BytesIO(build_context(tmp_path).data), mode="r:gz") as tar:
        assert tar.getmember("run.sh").mode & 0o111


def test_over_the_limit_names_the_five_largest_files(tmp_path):
    sizes = {"a.bin": 6000, "b.bin": 5000, "c.bin": 4000, "d.bin": 3000, "e.bin": 2000}
    for name, size in sizes.items():
        write(tmp_path, name, b"0" * size)
    write(tmp_path, "small.py", b"0" * 10)

    with pytest.raises(TooLarge) as caught:
        build_context(tmp_path, limit_bytes=10_000)

    message = caught.value.message
    assert "over the limit" in message
    assert "a.bin (5.9 KiB)" in message
    for name in sizes:
        assert name in message
    assert "small.py" not in message
    assert ".shipyardignore" in message
    # Largest first.
    assert message.index("a.bin") < message.index("e.bin")


def test_limit_comes_from_the_environment(tmp_path, monkeypatch):
    write(tmp_path, "weights.bin", b"0" * 300_000)
    monkeypatch.setenv("SHIPYARD_MAX_CONTEXT_MB", "0.25")
    with pytest.raises(TooLarge, match="weights.bin"):
        build_context(tmp_path)
    monkeypatch.setenv("SHIPYARD_MAX_CONTEXT_MB", "1")
    assert build_context(tmp_path).files == {"weights.bin"}


def test_ignored_files_do_not_count_against_the_limit(tmp_path):
    write(tmp_path, "train.py", "print(1)")
    write(tmp_path, "data/huge.bin", b"0" * 50_000)
    write(tmp_path, ".shipyardignore", "data/\n")
    assert build_context(tmp_path, limit_bytes=1_000).files == {"train.py", ".shipyardignore"}


def test_missing_directory_is_a_clear_error(tmp_path):
    with pytest.raises(InvalidRequest, match="does not exist"):
        build_context(tmp_path / "nope")
