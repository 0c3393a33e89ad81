"""capture_git: what git says about the submitted code, from real repositories made here with
git itself, under a config of their own (no global or system config, a fixed author)."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from shipyard.client import git_capture
from shipyard.client.git_capture import capture_git, strip_credentials

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")

ISOLATED = {
    "GIT_CONFIG_GLOBAL": "/dev/null",
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_AUTHOR_NAME": "Ada",
    "GIT_AUTHOR_EMAIL": "ada@example.com",
    "GIT_COMMITTER_NAME": "Ada",
    "GIT_COMMITTER_EMAIL": "ada@example.com",
}


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=repo, capture_output=True, check=True)
    return done.stdout.decode()


def commit(repo: Path, message: str) -> str:
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", message)
    return git(repo, "rev-parse", "HEAD").strip()


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A repository with one commit on main: train.py, lib/model.py and a .gitignore."""
    for name, value in ISOLATED.items():
        monkeypatch.setenv(name, value)
    for name in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE"):
        monkeypatch.delenv(name, raising=False)
    # git looks no higher than tmp_path for a repository (tmp_path/outside is in none).
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))
    root = tmp_path / "project"
    (root / "lib").mkdir(parents=True)
    git(root, "init", "-q", "-b", "main")
    (root / "train.py").write_text("import lib.model\n\nlib.model.fit()\n")
    (root / "lib" / "model.py").write_text("def fit():\n    return 1\n")
    (root / ".gitignore").write_text("data.bin\n")
    commit(root, "first")
    return root


def test_a_clean_repository_records_its_commit_branch_and_remote_without_credentials(repo):
    git(repo, "remote", "add", "origin", "https://alice:s3cr3t@example.com/r.git")
    captured = capture_git(repo)
    assert captured.diff == b""
    assert captured.warnings == []
    assert captured.record == {
        "commit": git(repo, "rev-parse", "HEAD").strip(),
        "branch": "main",
        "remote": "https://example.com/r.git",
        "dirty": False,
        "diff_sha256": None,
        "diff_bytes": 0,
        "changed_files": 0,
        "unpushed": [git(repo, "rev-parse", "HEAD").strip()],  # nothing was pushed
        "unpushed_truncated": False,
        "root": "project",
        "subdirectory": ".",
    }
    assert "s3cr3t" not in repr(captured.record) and "alice" not in repr(captured.record)


def test_staged_unstaged_and_untracked_changes_are_in_the_diff_and_ignored_files_are_not(repo):
    # User config that would change git diff's output, and must not change this one.
    git(repo, "config", "diff.noprefix", "true")
    git(repo, "config", "diff.mnemonicPrefix", "true")
    git(repo, "config", "color.ui", "always")
    (repo / "lib" / "model.py").write_text("def fit():\n    return 2\n")
    git(repo, "add", "lib/model.py")  # staged
    (repo / "train.py").write_text("import lib.model\n\nlib.model.fit(epochs=3)\n")  # unstaged
    (repo / "notes é.txt").write_text("first\nsecond")  # untracked, no final newline
    with (repo / "data.bin").open("wb") as handle:  # ignored: 50 MB, sparse
        handle.truncate(50 * 2**20)

    captured = capture_git(repo)
    diff = captured.diff.decode()
    assert "diff --git a/lib/model.py b/lib/model.py" in diff and "+    return 2" in diff
    assert "diff --git a/train.py b/train.py" in diff and "+lib.model.fit(epochs=3)" in diff
    assert "diff --git a/notes é.txt b/notes é.txt\nnew file mode 100644\n" in diff
    assert "+first\n+second\n\\ No newline at end of file\n" in diff
    assert "data.bin" not in diff and "\x1b[" not in diff
    record = captured.record
    assert record is not None
    assert record["dirty"] is True and record["changed_files"] == 3
    assert record["diff_bytes"] == len(captured.diff) < 2000
    assert record["diff_sha256"] == hashlib.sha256(captured.diff).hexdigest()
    assert captured.warnings == []


def test_untracked_files_are_written_as_git_writes_new_files(repo):
    files = {
        "a space.py": b"x = 1\n",
        'a"quote\\.txt': b"one line, no newline",
        "tab\there.txt": b"a\nb\n",
        "empty.txt": b"",
        "ünïcode/módel.py": b"\xc3\xa9\r\nwindows line\r\n",
    }
    for name, data in files.items():
        (repo / name).parent.mkdir(exist_ok=True)
        (repo / name).write_bytes(data)
    (repo / "run.sh").write_bytes(b"#!/bin/sh\necho hi\n")
    (repo / "run.sh").chmod(0o755)
    (repo / "latest").symlink_to("train.py")

    captured = capture_git(repo)
    # git's own rendering of the same files, once they are intent-to-add.
    git(repo, "add", "-N", ".")
    expected = subprocess.run(
        ["git", "-c", "core.quotepath=off", "diff", "--binary", "--full-index"],
        cwd=repo,
        capture_output=True,
        check=True,
    ).stdout
    assert captured.diff == expected
    assert captured.record is not None and captured.record["changed_files"] == 7


def test_a_binary_untracked_file_is_named_with_its_hash_and_size(repo):
    weights = b"\x00\x01" * 100
    (repo / "weights.pt").write_bytes(weights)
    (repo / "latin1.txt").write_bytes("caf\xe9\n".encode("latin-1"))
    first = capture_git(repo)
    diff = first.diff.decode()
    assert "Binary files /dev/null and b/weights.pt differ\n" in diff
    assert f"sha256 {hashlib.sha256(weights).hexdigest()} size 200\n" in diff
    assert "Binary files /dev/null and b/latin1.txt differ\n" in diff
    (repo / "weights.pt").write_bytes(b"\x00\x02" * 100)
    second = capture_git(repo)
    assert first.record and second.record
    assert first.record["diff_sha256"] != second.record["diff_sha256"]


def test_a_detached_head_has_no_branch(repo):
    sha = git(repo, "rev-parse", "HEAD").strip()
    git(repo, "checkout", "-q", "--detach")
    record = capture_git(repo).record
    assert record is not None and record["branch"] is None and record["commit"] == sha


def test_a_repository_with_no_commit_diffs_against_the_empty_tree(tmp_path, repo):
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    git(fresh, "init", "-q", "-b", "main")
    (fresh / "staged.py").write_text("a = 1\n")
    git(fresh, "add", "staged.py")
    (fresh / "new.py").write_text("b = 2\n")
    captured = capture_git(fresh)
    assert captured.warnings == []
    assert captured.record is not None
    assert captured.record["commit"] is None and captured.record["branch"] == "main"
    assert captured.record["unpushed"] == [] and captured.record["changed_files"] == 2
    assert b"diff --git a/staged.py b/staged.py\nnew file mode 100644\n" in captured.diff
    assert b"diff --git a/new.py b/new.py\nnew file mode 100644\n" in captured.diff


def test_a_subdirectory_context_is_recorded_and_the_diff_covers_the_whole_repository(repo):
    (repo / "train.py").write_text("changed\n")
    (repo / "lib" / "extra.py").write_text("more\n")
    captured = capture_git(repo / "lib")
    assert captured.record is not None
    assert captured.record["subdirectory"] == "lib" and captured.record["root"] == "project"
    assert b"diff --git a/train.py b/train.py" in captured.diff
    assert b"diff --git a/lib/extra.py b/lib/extra.py" in captured.diff


def test_outside_a_repository_there_is_no_record_and_no_warning(tmp_path, repo):
    outside = tmp_path / "outside"
    outside.mkdir()
    assert capture_git(outside) == (None, b"", [])


def test_without_git_there_is_no_record_and_a_warning(repo, tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path / "no-git-here"))
    captured = capture_git(repo)
    assert captured.record is None and captured.diff == b""
    assert captured.warnings == ["git is not installed: no commit or diff is recorded"]


def test_commits_not_on_a_remote_are_listed_newest_first(repo, tmp_path):
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    git(repo, "remote", "add", "origin", str(remote))
    git(repo, "push", "-q", "-u", "origin", "main")
    (repo / "a.py").write_text("a\n")
    older = commit(repo, "second")
    (repo / "b.py").write_text("b\n")
    newer = commit(repo, "third")
    record = capture_git(repo).record
    assert record is not None
    assert record["unpushed"] == [newer, older] and record["unpushed_truncated"] is False
    assert record["remote"] == str(remote)


def test_past_a_hundred_unpushed_commits_the_list_is_cut(repo):
    stream = "".join(
        f"commit refs/heads/main\ncommitter Ada <ada@example.com> {1_700_000_000 + n} +0000\n"
        f"data 2\nc\n" + ("from refs/heads/main^0\n" if n == 0 else "") + "\n"
        for n in range(101)
    )
    subprocess.run(["git", "fast-import", "--quiet"], cwd=repo, input=stream.encode(), check=True)
    record = capture_git(repo).record
    assert record is not None and record["unpushed_truncated"] is True
    assert record["unpushed"] == git(repo, "rev-list", "--max-count=100", "HEAD").split()


def test_an_untracked_repository_is_named_in_a_warning_and_a_file_named_head_is_a_file(repo):
    nested = repo / "vendor" / "lib"
    nested.mkdir(parents=True)
    git(nested, "init", "-q")
    (nested / "x.py").write_text("x\n")
    (repo / "HEAD").write_text("not a revision\n")
    captured = capture_git(repo)
    assert captured.warnings == ["untracked repository vendor/lib/ is not in the diff"]
    assert b"vendor" not in captured.diff and b"+not a revision\n" in captured.diff
    assert captured.record is not None and captured.record["commit"] is not None


def test_the_remote_is_the_branchs_upstream_before_origin(repo):
    git(repo, "remote", "add", "origin", "git@example.com:org/fork.git")
    git(repo, "remote", "add", "upstream", "ssh://git:pw@example.com/org/main.git")
    git(repo, "config", "branch.main.remote", "upstream")
    record = capture_git(repo).record
    assert record is not None and record["remote"] == "ssh://git@example.com/org/main.git"
    git(repo, "config", "--unset", "branch.main.remote")
    record = capture_git(repo).record
    assert record is not None and record["remote"] == "git@example.com:org/fork.git"


@pytest.mark.parametrize(
    "url, stripped",
    [
        ("https://user:token@host/x.git", "https://host/x.git"),
        ("https://token@host/x", "https://host/x"),
        ("https://host:8443/x.git?private_token=abc#frag", "https://host:8443/x.git"),
        ("https://u:p@ss@host/x", "https://host/x"),
        ("git@host:org/x.git", "git@host:org/x.git"),
        ("git:pw@host:org/x.git", "git@host:org/x.git"),
        ("ssh://git@host/x", "ssh://git@host/x"),
        ("ssh://git:pw@host:2222/x", "ssh://git@host:2222/x"),
        ("git+ssh://me:pw@host/x", "git+ssh://me@host/x"),
        ("/srv/git/x.git", "/srv/git/x.git"),
        ("file:///srv/git/x.git", "file:///srv/git/x.git"),
    ],
)
def test_credentials_are_stripped_from_remote_urls(url, stripped):
    assert strip_credentials(url) == stripped


def git_dir_snapshot(repo: Path) -> dict[str, tuple[int, int, str]]:
    """Every file and directory under .git: (size, mtime_ns, content hash)."""
    snapshot = {}
    for current, _, names in os.walk(repo / ".git"):
        for path in [Path(current), *(Path(current) / name for name in names)]:
            info = path.lstat()
            digest = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else ""
            snapshot[str(path.relative_to(repo))] = (info.st_size, info.st_mtime_ns, digest)
    return snapshot


def test_nothing_is_written_into_the_repository(repo):
    index = repo / ".git" / "index"
    # A file git sees as maybe-changed (new mtime, same bytes): `git diff` would refresh the
    # index for it; a staged, an unstaged and an untracked change.
    os.utime(repo / "train.py", ns=(1, 1))
    (repo / "lib" / "model.py").write_text("def fit():\n    return 3\n")
    git(repo, "add", "lib/model.py")
    (repo / ".gitignore").write_text("data.bin\n*.log\n")
    (repo / "new.py").write_text("new\n")
    before, index_before = git_dir_snapshot(repo), index.read_bytes()
    captured = capture_git(repo)
    assert captured.record is not None and captured.record["changed_files"] == 3
    assert git_dir_snapshot(repo) == before
    assert index.read_bytes() == index_before


@pytest.mark.slow
def test_five_thousand_dirty_files_give_git_diffs_bytes(repo, monkeypatch):
    for n in range(5000):
        folder = repo / "pkg" / f"p{n % 40}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"m{n}.py").write_text(f"value = {n}\n")
    commit(repo, "many")
    for path in (repo / "pkg").rglob("*.py"):
        path.write_text(path.read_text() + "changed = True\n")
    (repo / "untracked.py").write_text("u = 1\n")
    monkeypatch.setattr(git_capture, "_cores", lambda: 4)  # four git diff runs, concatenated

    captured = capture_git(repo)
    assert captured.record is not None and captured.warnings == []
    assert captured.record["changed_files"] == 5001
    one_run = subprocess.run(
        ["git", "diff", "HEAD", "--binary", "--full-index", "--no-renames"],
        cwd=repo,
        capture_output=True,
        check=True,
    ).stdout
    tracked, _, new_file = captured.diff.partition(b"diff --git a/untracked.py")
    assert tracked == one_run and new_file.startswith(b" b/untracked.py\n")


def test_a_split_diff_keeps_files_deleted_from_the_index(repo, monkeypatch):
    # big/ holds 1,500 files in ten directories and three of its own: split, the three are
    # pathspecs of their own, and one of them is gone from the index.
    for n in range(1500):
        (repo / "big" / f"d{n % 10}").mkdir(parents=True, exist_ok=True)
        (repo / "big" / f"d{n % 10}" / f"m{n}.py").write_text(f"v = {n}\n")
    for name in ("a.py", "gone.py", "kept.py"):
        (repo / "big" / name).write_text(f"{name}\n")
    commit(repo, "big")
    git(repo, "rm", "-q", "big/gone.py")
    git(repo, "rm", "-q", "--cached", "big/kept.py")  # deleted from the index, kept on disk
    (repo / "big" / "a.py").write_text("changed\n")
    (repo / "big" / "d3" / "m3.py").write_text("changed\n")
    monkeypatch.setattr(git_capture, "_cores", lambda: 2)
    assert (
        len(
            git_capture._diff_pathspecs(
                sorted(
                    p.relative_to(repo).as_posix().encode() for p in (repo / "big").rglob("*.py")
                )
            )
        )
        == 2
    )

    captured = capture_git(repo)
    one_run = subprocess.run(
        ["git", "diff", "HEAD", "--binary", "--full-index", "--no-renames"],
        cwd=repo,
        capture_output=True,
        check=True,
    ).stdout
    assert b"deleted file mode" in one_run and b"b/big/gone.py" in one_run
    tracked, _, new_file = captured.diff.partition(b"diff --git a/big/kept.py b/big/kept.py\nnew")
    assert tracked == one_run and new_file  # kept.py: deleted, and back as a new file


def test_the_same_tree_gives_the_same_diff(repo):
    (repo / "train.py").write_text("changed\n")
    for name in ("b.py", "a.py", "c/d.py"):
        (repo / name).parent.mkdir(exist_ok=True)
        (repo / name).write_text(name)
    first, second = capture_git(repo), capture_git(repo)
    assert first.diff == second.diff and first.diff
    assert first.record and second.record
    assert first.record["diff_sha256"] == second.record["diff_sha256"]
    assert first.diff.index(b"b/a.py") < first.diff.index(b"b/b.py") < first.diff.index(b"b/c/")


def test_a_git_error_becomes_a_warning(repo):
    (repo / ".git" / "index").write_bytes(b"not an index")
    captured = capture_git(repo)
    assert captured.record is not None and captured.record["root"] == "project"
    assert [w.split(" (")[0] for w in captured.warnings] == [
        "git ls-files failed",
        "git diff failed",
    ]
    assert captured.record["dirty"] is True  # the diff could not show it clean


def test_diff_runs_cover_contiguous_stretches_of_the_paths():
    paths = sorted(
        [f"src/d{n % 10}/m{n}.py".encode() for n in range(1200)]
        + [f"tests/u{n % 5}/t{n}.py".encode() for n in range(600)]
        + [b"a", b"a-b", b"setup.py"]
    )
    runs = git_capture._diff_pathspecs(paths, workers=3)
    assert len(runs) == 3
    flat = [spec for run in runs for spec in run]
    assert flat == sorted(flat) and b"src/d0" in flat and b"tests/u4" in flat and b"a" in flat
    for path in paths:  # under exactly one pathspec
        covering = [s for s in flat if path == s or path.startswith(s + b"/")]
        assert len(covering) == 1, (path, covering)
    assert git_capture._diff_pathspecs(paths[:100], workers=4) == [[]]  # too few to split
    flat_dir = sorted(f"m{n}.py".encode() for n in range(5000))
    assert git_capture._diff_pathspecs(flat_dir, workers=2) == [[]]  # too many pathspecs
    # A deleted file `a` and a new `a/b`: the pathspec `a` would take both.
    assert git_capture._diff_pathspecs(sorted([*paths, b"a/b"]), workers=3) == [[]]
