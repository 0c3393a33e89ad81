"""What git says about the code an experiment is submitted from: the commit, the branch, the
remote, the commits not pushed, and the diff (staged, unstaged and untracked files) that
the commit does not hold. Captured by the CLI and SDK at submit, before the upload.

Nothing is written into the user's repository: git runs with GIT_OPTIONAL_LOCKS=0 (no
optional lock, no index refresh), the diff is plumbing's diff-index (porcelain `git diff`
may refresh the index whatever that says), and untracked files are read by Python, never
`git add`ed. A submit never fails here: what git cannot tell becomes a warning."""

from __future__ import annotations

import bisect
import hashlib
import os
import re
import shutil
import stat
import subprocess
import time
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any, NamedTuple

UNPUSHED_SHOWN = 100
# The tree a diff of a repository with no commit yet starts from, by object format.
EMPTY_TREES = {
    "sha1": "4b825dc642cb6eb9a060e54bf8d69288fbee4904",
    "sha256": "6ef19b41225c5369f1c104d45d8d85efa9b057b53b14b4b9b939dd74decc5321",
}
# git diff of many files is one thread's system calls (about 80 us a file here): from
# SPLIT_FROM files on, it is split by pathspec into a git a core, up to MOST_DIFF_RUNS.
# 5,000 modified files: 410 ms of CPU in one run, about 215 ms on two idle cores. Past
# MOST_PATHSPECS pathspecs git's matching costs more than the split saves.
SPLIT_FROM = 1000
MOST_DIFF_RUNS = 4
MOST_PATHSPECS = 64
BINARY_PROBE = 8000  # git's own: a NUL in the first 8000 bytes makes a file binary

# The same output whatever the user's config says (quoting, colour, fsmonitor's daemon).
GIT_OPTIONS = ("-c", "core.quotepath=off", "-c", "color.ui=never", "-c", "core.fsmonitor=false")
DIFF = (
    *("diff-index", "-p", "--binary", "--full-index", "--no-ext-diff", "--no-textconv"),
    *("--no-color", "--no-renames", "--src-prefix=a/", "--dst-prefix=b/", "-U3"),
    *("--inter-hunk-context=0", "--indent-heuristic", "--diff-algorithm=myers"),
)
SSH_SCHEMES = frozenset({"ssh", "git+ssh", "ssh+git"})


class GitCapture(NamedTuple):
    record: dict[str, Any] | None  # None: not in a git work tree, or git is not installed
    # The full diff against the commit, b"" when clean: UTF-8 text, but for the bytes of a
    # tracked file that is not (git writes them as they are).
    diff: bytes
    warnings: list[str]  # what the user should be told


class _Run(NamedTuple):
    ok: bool
    out: bytes
    error: str  # stderr's (last) fatal: or error: line, else its last; or why git did not end


class _Files(NamedTuple):
    tracked: list[bytes]  # the index's paths, sorted
    untracked: list[bytes]  # not ignored, sorted


class _Git:
    """git in one directory, every run under one deadline, several at once in threads."""

    def __init__(self, executable: str, directory: Path, deadline: float) -> None:
        self.argv = [executable, *GIT_OPTIONS]
        self.directory = directory
        self.deadline = deadline
        self.env = dict(os.environ)
        # No lock taken, no index rewritten; English errors (matched below); no prompts; no
        # objects fetched into a partial clone (git >= 2.44).
        self.env.update(GIT_OPTIONAL_LOCKS="0", LC_ALL="C", GIT_TERMINAL_PROMPT="0")
        self.env.update(GIT_NO_LAZY_FETCH="1")
        # The first round's five, then the diff's runs.
        self.pool = ThreadPoolExecutor(max_workers=5 + MOST_DIFF_RUNS)

    def start(self, *args: str | bytes) -> Future[_Run]:
        return self.pool.submit(self.run, *args)

    def run(self, *args: str | bytes) -> _Run:
        remaining = self.deadline - time.monotonic()
        if remaining <= 0:
            return _Run(False, b"", "not run: the time for git was up")
        try:
            done = subprocess.run(
                [*self.argv, *args],
                cwd=self.directory,
                env=self.env,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                timeout=remaining,
            )
        except subprocess.TimeoutExpired:
            return _Run(False, b"", "timed out")
        except OSError as error:
            return _Run(False, b"", str(error))
        lines = done.stderr.decode(errors="replace").strip().splitlines()
        fatal = [line for line in lines if line.startswith(("fatal:", "error:"))]
        return _Run(done.returncode == 0, done.stdout, (fatal or lines or [""])[-1])


def capture_git(directory: str | Path, *, timeout_s: float = 10.0) -> GitCapture:
    """The record and diff of the work tree holding `directory`; never raises for git."""
    executable = shutil.which("git")
    if executable is None:
        return GitCapture(None, b"", ["git is not installed: no commit or diff is recorded"])
    if not Path(directory).is_dir():
        return GitCapture(None, b"", [])
    git = _Git(executable, Path(directory), time.monotonic() + timeout_s)
    with git.pool:
        return _capture(git)


def _capture(git: _Git) -> GitCapture:
    # One round of git at once, then the diff (split over HEAD's and the index's paths)
    # while Python reads the untracked files. No git status: it would scan the tracked files
    # a second time, as the diff does.
    head_run = git.start(
        *("rev-parse", "--show-toplevel", "--show-prefix", "--show-object-format"),
        *("HEAD", "--symbolic-full-name", "HEAD"),
    )
    files_run = git.start(
        *("ls-files", "-z", "-t", "--cached", "--others", "--exclude-standard"),
        *("--full-name", ":/"),  # the whole work tree, from any directory of it
    )
    # The diff's split covers HEAD's paths too: a file deleted from the index is in no
    # pathspec made from the index alone. (Fails with no commit yet: nothing to delete.)
    head_files_run = git.start("ls-tree", "-r", "-z", "--name-only", "--full-tree", "HEAD", "--")
    unpushed_run = git.start(
        "rev-list", f"--max-count={UNPUSHED_SHOWN + 1}", "HEAD", "--not", "--remotes", "--"
    )
    config_run = git.start(
        "config", "-z", "--get-regexp", r"^(remote\..*\.url|branch\..*\.remote)$"
    )
    found = head_run.result()
    if "not a git repository" in found.error or "in a work tree" in found.error:
        return GitCapture(None, b"", [])
    lines = found.out.decode(errors="replace").split("\n")
    if len(lines) < 4:
        return GitCapture(None, b"", [f"git rev-parse failed: {found.error}"])
    toplevel, prefix, object_format = lines[:3]
    hash_name = object_format if object_format in EMPTY_TREES else "sha1"
    warnings: list[str] = []
    commit: str | None = None
    if found.ok:
        commit, branch = lines[3], _branch(lines[4])
    else:  # no commit yet (an "unknown revision"), or HEAD is broken
        if "unknown revision" not in found.error:
            warnings.append(f"git could not read HEAD ({found.error}): no commit recorded")
        branch = _branch(git.run("symbolic-ref", "-q", "HEAD").out.decode(errors="replace"))

    listed = files_run.result()
    if not listed.ok:
        warnings.append(f"git ls-files failed ({listed.error}): new files are not in the diff")
    files = _parse_files(listed.out) if listed.ok else _Files([], [])
    committed = head_files_run.result()
    # Without HEAD's list (no commit yet, or ls-tree failed) one run covers every path.
    split: list[list[bytes]] = [[]]
    if committed.ok:
        split = _diff_pathspecs(sorted({*files.tracked, *committed.out.split(b"\0")[:-1]}))
    base = commit or EMPTY_TREES[hash_name]
    runs = [
        git.start(*DIFF, base, "--", *(b":(literal)" + spec for spec in specs)) for specs in split
    ]
    untracked = [_untracked_patch(Path(toplevel), path, hash_name) for path in files.untracked]
    tracked_runs = [run.result() for run in runs]
    failed = [run.error for run in tracked_runs if not run.ok]
    if failed:
        warnings.append(f"git diff failed ({failed[0]}): the diff leaves out tracked files")
    tracked = b"" if failed else b"".join(run.out for run in tracked_runs)
    warnings += [patch for patch in untracked if isinstance(patch, str)]
    new_files = [patch for patch in untracked if isinstance(patch, bytes) and patch]
    diff = tracked + b"".join(new_files)

    unpushed, truncated = _unpushed(unpushed_run.result(), commit, warnings)
    record = {
        "commit": commit,
        "branch": branch,
        "remote": _remote(config_run.result(), branch),
        # A failed diff cannot show the tree clean.
        "dirty": bool(diff or failed),
        "diff_sha256": hashlib.sha256(diff).hexdigest() if diff else None,
        "diff_bytes": len(diff),
        "changed_files": _files_in(tracked) + len(new_files),
        "unpushed": unpushed,
        "unpushed_truncated": truncated,
        "root": Path(toplevel).name,  # not the path: that is the submitter's machine's
        "subdirectory": prefix.rstrip("/") or ".",
    }
    return GitCapture(record, diff, warnings)


def _branch(symbolic: str) -> str | None:
    """refs/heads/<name> -> <name>; None when detached (rev-parse says "HEAD")."""
    symbolic = symbolic.strip()
    return symbolic[len("refs/heads/") :] if symbolic.startswith("refs/heads/") else None


def _parse_files(out: bytes) -> _Files:
    """`git ls-files -z -t --cached --others`: a tag ("?" untracked, "H" and others tracked),
    a space and the path. An unmerged path is listed once a stage."""
    entries = out.split(b"\0")
    untracked = [entry[2:] for entry in entries if entry[:2] == b"? "]
    tracked = {entry[2:] for entry in entries if entry and entry[:2] != b"? "}
    return _Files(sorted(tracked), sorted(untracked))


def _diff_pathspecs(paths: list[bytes], workers: int | None = None) -> list[list[bytes]]:
    """Pathspecs for each git diff run ([[]]: one run over the whole tree). `paths` (HEAD's
    and the index's) are sorted, git's own order; each run covers a stretch of them, so the
    runs' outputs, concatenated, are byte for byte the one run's."""
    workers = min(workers or _cores(), MOST_DIFF_RUNS)
    if workers < 2 or len(paths) < SPLIT_FROM:
        return [[]]
    units = _units(paths, 0, len(paths), 0, max(1, len(paths) // (2 * workers)))
    if units is None or len(units) > MOST_PATHSPECS:
        return [[]]
    runs: list[list[bytes]] = [[]]
    done = 0
    for spec, count in units:
        if done >= len(paths) * len(runs) / workers:
            runs.append([])
        runs[-1].append(spec)
        done += count
    return runs


def _units(
    paths: list[bytes], low: int, high: int, start: int, most: int
) -> list[tuple[bytes, int]] | None:
    """(pathspec, paths it covers) for paths[low:high], which share their first `start`
    bytes: a directory, or its parts when it holds over `most`. None: a file that became a
    directory (the pathspec `a` would match `a/b` too)."""
    units: list[tuple[bytes, int]] = []
    while low < high:
        slash = paths[low].find(b"/", start)
        if slash < 0:
            units.append((paths[low], 1))
            low += 1
            continue
        directory = paths[low][:slash]
        # Sorted, the paths under `directory/` come before `directory0` ("0" follows "/").
        end = bisect.bisect_left(paths, directory + b"0", low, high)
        if _holds(paths, directory):
            return None
        if end - low > most:
            inner = _units(paths, low, end, slash + 1, most)
            if inner is None:
                return None
            units += inner
        else:
            units.append((directory, end - low))
        low = end
    return units


def _holds(paths: list[bytes], path: bytes) -> bool:
    at = bisect.bisect_left(paths, path)
    return at < len(paths) and paths[at] == path


def _cores() -> int:
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def _untracked_patch(root: Path, path: bytes, hash_name: str) -> bytes | str:
    """A new file's diff, as git writes it (the warning instead when it cannot be read)."""
    if path.endswith(b"/"):  # a repository inside the repository: git lists the directory
        return f"untracked repository {os.fsdecode(path)} is not in the diff"
    full = root / os.fsdecode(path)
    data: bytes | tuple[bytes, bytes, int]
    try:
        info = os.lstat(full)
        if stat.S_ISLNK(info.st_mode):
            mode, data = b"120000", os.fsencode(os.readlink(full))
        elif stat.S_ISREG(info.st_mode):
            mode = b"100755" if info.st_mode & stat.S_IXUSR else b"100644"
            data = _read_unless_binary(full, hash_name)
        else:
            return b""
    except OSError as error:
        return f"untracked file {os.fsdecode(path)} is not in the diff: {error.strerror}"
    name_b = _quote(b"b/" + path)
    head = b"diff --git %s %s\nnew file mode %s\n" % (_quote(b"a/" + path), name_b, mode)
    zero = b"0" * hashlib.new(hash_name).digest_size * 2
    if isinstance(data, tuple):  # binary: its hash and size, so the diff's hash follows it
        blob, sha256, size = data
        return (
            head
            + b"index %s..%s\n" % (zero, blob)
            + b"Binary files /dev/null and %s differ\n" % name_b
            + b"sha256 %s size %d\n" % (sha256, size)
        )
    head += b"index %s..%s\n" % (zero, _blob_id(hash_name, data))
    if not data:  # git shows an empty file by its header alone
        return head
    lines = data.split(b"\n")
    ended = lines[-1] == b""
    if ended:
        lines.pop()
    count = b"" if len(lines) == 1 else b",%d" % len(lines)
    tab = b"\t" if b" " in name_b else b""  # git ends a name holding a space with a tab
    return (
        head
        + b"--- /dev/null\n+++ %s%s\n@@ -0,0 +1%s @@\n" % (name_b, tab, count)
        + b"+"
        + b"\n+".join(lines)
        + b"\n"
        + (b"" if ended else b"\\ No newline at end of file\n")
    )


def _read_unless_binary(path: Path, hash_name: str) -> bytes | tuple[bytes, bytes, int]:
    """The file's bytes when it is UTF-8 text; else (blob id, sha256, size), read in chunks."""
    with path.open("rb") as handle:
        start = handle.read(BINARY_PROBE)
        if b"\0" not in start:
            data = start + handle.read()
            try:
                data.decode("utf-8")
                return data
            except UnicodeDecodeError:
                pass
        handle.seek(0)
        size = os.fstat(handle.fileno()).st_size
        blob = hashlib.new(hash_name)
        sha256 = hashlib.sha256()
        blob.update(b"blob %d\0" % size)
        for chunk in iter(lambda: handle.read(2**20), b""):
            blob.update(chunk)
            sha256.update(chunk)
        return blob.hexdigest().encode(), sha256.hexdigest().encode(), size


def _blob_id(hash_name: str, data: bytes) -> bytes:
    """The id git gives the file's bytes as a blob (the `index` line's)."""
    return hashlib.new(hash_name, b"blob %d\0" % len(data) + data).hexdigest().encode()


_NEEDS_QUOTES = re.compile(rb'[\x00-\x1f"\\\x7f]')
_ESCAPES = {7: b"\\a", 8: b"\\b", 9: b"\\t", 10: b"\\n", 11: b"\\v", 12: b"\\f", 13: b"\\r"}


def _quote(name: bytes) -> bytes:
    """git's quoting of a path (core.quotepath off): C-style when it holds `"`, a backslash
    or a control character."""
    if not _NEEDS_QUOTES.search(name):
        return name
    out = bytearray(b'"')
    for byte in name:
        if byte in b'"\\':
            out += b"\\" + bytes([byte])
        elif byte in _ESCAPES:
            out += _ESCAPES[byte]
        elif byte < 0x20 or byte == 0x7F:
            out += b"\\%03o" % byte
        else:
            out.append(byte)
    return bytes(out + b'"')


def _files_in(diff: bytes) -> int:
    """The files in git's diff: a line that starts `diff --git ` is always a header (content
    lines start with ` `, `+`, `-` or `\\`; base85 has no space)."""
    return diff.startswith(b"diff --git ") + diff.count(b"\ndiff --git ")


def _unpushed(run: _Run, commit: str | None, warnings: list[str]) -> tuple[list[str], bool]:
    if commit is None:  # no commit, nothing to push (rev-list fails on the unborn HEAD)
        return [], False
    if not run.ok:
        warnings.append(f"git rev-list failed ({run.error}): unpushed commits not recorded")
        return [], False
    shas = run.out.decode().split()
    return shas[:UNPUSHED_SHOWN], len(shas) > UNPUSHED_SHOWN


def _remote(run: _Run, branch: str | None) -> str | None:
    """The URL of the branch's upstream remote, else origin's, else the first remote's."""
    urls: dict[str, str] = {}  # in the config's order
    upstream = None
    # Exit 1 (no key matched) leaves out=b"": no remote.
    for entry in run.out.split(b"\0"):
        key, _, value = entry.decode(errors="replace").partition("\n")
        if key.startswith("remote.") and key.endswith(".url"):
            urls.setdefault(key[len("remote.") : -len(".url")], value)
        elif branch is not None and key == f"branch.{branch}.remote":
            upstream = value
    url = urls.get(upstream or "") or urls.get("origin") or next(iter(urls.values()), None)
    return None if url is None else strip_credentials(url)


_URL = re.compile(
    r"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*)://(?:(?P<userinfo>[^/?#]*)@)?(?P<rest>[^?#]*)"
)
_SCP = re.compile(r"(?P<user>[^@/:]+)(?::[^@/]*)?@(?P<rest>[^/:]+:.*)")


def strip_credentials(url: str) -> str:
    """A remote URL without passwords or tokens: https://user:token@host/x -> https://host/x;
    ssh keeps its user (git@, not a secret) but not a password; queries are dropped."""
    match = _URL.match(url)
    if match:
        scheme, userinfo = match["scheme"], match["userinfo"]
        user = userinfo.partition(":")[0] if userinfo and scheme.lower() in SSH_SCHEMES else ""
        return f"{scheme}://{user + '@' if user else ''}{match['rest']}"
    scp = _SCP.fullmatch(url)  # scp-like user@host:path; a "password" there is dropped too
    if scp:
        return f"{scp['user']}@{scp['rest']}"
    return url
