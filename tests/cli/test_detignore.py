"""Determined's `.detignore` is read when there is no `.shipyardignore`, with gitignore's
rules (pathspec): negations, directory patterns, anchored patterns."""

from __future__ import annotations

import pytest

from shipyard.client.contexts import build_context
from shipyard.client.ignore import IgnoreRules
from shipyard.common.errors import InvalidRequest

FILES = (
    "train.py",
    "data/train.csv",
    "pkg/data/nested.csv",  # `data/` matches a directory at any depth
    "logs/run.log",
    "logs/keep.log",  # re-included by `!logs/keep.log`
    "model.pt",
    "pkg/model.pt",
    "best.pt",  # re-included by `!best.pt`
    "build",  # a file: `/build/` ignores only a directory
    "pkg/build/out.o",  # `/build/` is anchored: this one stays
    "notes/todo.md",
)
DETIGNORE = """# as a Determined project has it
data/
logs/*
!logs/keep.log
*.pt
!best.pt
/build/
notes/
!notes/todo.md
"""


def write(root, name: str, text: str = "x") -> None:
    path = root / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_detignore_is_read_with_gitignore_rules(tmp_path):
    write(tmp_path, ".detignore", DETIGNORE)
    for name in FILES:
        write(tmp_path, name)
    assert build_context(tmp_path).files == {
        ".detignore",
        "train.py",
        "logs/keep.log",  # `logs/*` ignores the files, not the directory: one comes back
        "best.pt",
        "build",
        "pkg/build/out.o",
        # notes/ is ignored as a directory: as in git, nothing inside comes back
    }


def test_a_shipyardignore_wins_over_a_detignore(tmp_path):
    write(tmp_path, ".detignore", "*.py\n")
    write(tmp_path, ".shipyardignore", "*.csv\n")
    write(tmp_path, "train.py")
    write(tmp_path, "data.csv")
    assert build_context(tmp_path).files == {".detignore", ".shipyardignore", "train.py"}


@pytest.mark.parametrize(
    ("pattern", "path", "is_dir", "ignored"),
    [
        ("/anchored.txt", "anchored.txt", False, True),
        ("/anchored.txt", "sub/anchored.txt", False, False),
        ("a/b", "a/b", False, True),  # a slash inside anchors it too
        ("a/b", "x/a/b", False, False),
        ("cache/", "cache", True, True),
        ("cache/", "cache", False, False),
        ("**/tmp", "a/b/tmp", True, True),
        ("out/**", "out/a/b.txt", False, True),
        ("a/**/z", "a/z", False, True),
        ("\\#hash", "#hash", False, True),  # an escaped '#' is a pattern, not a comment
        ("*.log\n!important.log", "important.log", False, False),
    ],
)
def test_gitignore_semantics(pattern, path, is_dir, ignored):
    rules = IgnoreRules.from_text(pattern, ".detignore")
    assert rules.is_ignored(path, is_dir=is_dir) is ignored


def test_a_pattern_git_refuses_names_the_file_and_line(tmp_path):
    write(tmp_path, ".detignore", "*.pt\n!\n")
    with pytest.raises(InvalidRequest) as err:
        build_context(tmp_path)
    assert str(err.value).startswith(".detignore, line 2: ")
