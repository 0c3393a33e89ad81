"""The share-nothing entry's two parts on their own (tests/e2e/test_share_nothing.py runs them
against a real master in Pods): the output shipper's numbering and retries, and the code
fetch's cache and checks. The master here is a stand-in object that keeps what it is sent
the way the real one does (lines numbered per run and source) and can lose answers."""

from __future__ import annotations

import hashlib
import io
import multiprocessing
import os
import tarfile
import time
from pathlib import Path

import pytest

from shipyard.common.errors import Forbidden, MasterUnavailable
from shipyard.launch import _code, _ship


class StandInMaster:
    """Stores batches as the master does; the first ``lose`` answers are lost after the
    batch was stored (the shipper must send it again, and nothing may double)."""

    def __init__(self, lose: int = 0, archive: bytes = b"", refuse: bool = False) -> None:
        self.lines: list[str] = []
        self.calls: list[tuple[str, str]] = []
        self._lose = lose
        self._archive = archive
        self._refuse = refuse

    def request(self, method: str, path: str, body=None, *, timeout_s=None):
        self.calls.append((method, path))
        if path.endswith("/config"):
            return {"name": "exp"}
        if self._refuse:
            raise Forbidden("this task token speaks for run 2")
        new = body["lines"][len(self.lines) - body["first_line"] :]
        self.lines.extend(new)
        if self._lose:
            self._lose -= 1
            raise MasterUnavailable("the answer was lost")
        return {"stored": len(new)}

    def download(self, path: str, *, timeout_s=None) -> bytes:
        self.calls.append(("GET", path))
        return self._archive


def test_every_line_arrives_once_in_order_across_lost_answers(monkeypatch):
    monkeypatch.setattr(_ship, "INTERVAL_S", 0.01)
    master = StandInMaster(lose=2)
    shipper = _ship.LogShipper(master, trial_id=3, run_id=1)
    shipper.write(b"[rank=0] one\n[rank=1] tw")
    shipper.write(b"o\nthree\r\n")
    shipper.write(b"last line without a newline")
    assert shipper.close(timeout_s=10)
    assert master.lines == ["[rank=0] one", "[rank=1] two", "three", "last line without a newline"]
    assert master.calls[0] == ("POST", "/api/v1/trials/3/logs")


def test_a_large_output_goes_in_bounded_batches():
    master = StandInMaster()
    shipper = _ship.LogShipper(master, trial_id=3, run_id=1)
    line = "x" * 1000
    shipper.write((line + "\n").encode() * 1000)  # ~1 MB
    assert shipper.close(timeout_s=10)
    assert master.lines == [line] * 1000
    assert len(master.calls) >= 1_000_000 // _ship.MAX_BATCH_BYTES


def test_many_short_lines_go_in_batches_the_master_takes():
    master = StandInMaster()
    shipper = _ship.LogShipper(master, trial_id=3, run_id=1)
    shipper.write(b"1\n" * 25_000)  # 50 KB: one batch by size, too many lines for one
    assert shipper.close(timeout_s=10)
    assert master.lines == ["1"] * 25_000
    assert len(master.calls) >= 25_000 // _ship.MAX_BATCH_LINES


def test_a_refusing_master_stops_the_shipper_without_hanging(capsys):
    shipper = _ship.LogShipper(StandInMaster(refuse=True), trial_id=3, run_id=1)
    shipper.write(b"hello\n")
    assert shipper.close(timeout_s=10)
    assert "refuses this run's output" in capsys.readouterr().err


def _archive(files: dict[str, bytes], link: tuple[str, str] | None = None) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        if link:
            info = tarfile.TarInfo(link[0])
            info.type, info.linkname = tarfile.SYMTYPE, link[1]
            tar.addfile(info)
    return buf.getvalue()


def test_the_code_is_downloaded_once_per_node_and_each_trial_gets_its_own_dir(tmp_path):
    archive = _archive({"train.py": b"print('hi')\n"})
    context_id = hashlib.sha256(archive).hexdigest()
    master = StandInMaster(archive=archive)
    first = _code.fetch(master, 7, context_id, "http://m:8080", tmp_path, 7)
    assert first.downloaded_bytes == len(archive)
    assert (first.workdir / "train.py").read_text() == "print('hi')\n"
    assert first.config_path.read_text() == '{"name": "exp"}'
    (first.workdir / "written-by-the-trial").write_text("kept")

    second = _code.fetch(master, 8, context_id, "http://m:8080", tmp_path, 7)
    assert second.downloaded_bytes == 0 and second.workdir != first.workdir
    assert [c for c in master.calls if c[1].endswith("/context")] == [
        ("GET", "/api/v1/trials/7/context")
    ]
    # A restart of trial 7 on this node keeps what its first run wrote.
    again = _code.fetch(master, 7, context_id, "http://m:8080", tmp_path, 7)
    assert (again.workdir / "written-by-the-trial").read_text() == "kept"


def _fetch_and_end(master: StandInMaster, trial_id: int, context_id: str, cache: Path) -> None:
    """A run's entry on the node that fetched its code and ended: its process, and the lock
    it held on the trial's directory, are gone."""
    run = multiprocessing.get_context("fork").Process(
        target=_code.fetch, args=(master, trial_id, context_id, "http://m:8080", cache, 7)
    )
    run.start()
    run.join()
    assert run.exitcode == 0


def test_what_no_run_used_for_a_week_is_removed_from_the_node_cache(tmp_path):
    old_archive = _archive({"old.py": b"x"})
    master = StandInMaster(archive=old_archive)
    old_id = hashlib.sha256(old_archive).hexdigest()
    _fetch_and_end(master, 1, old_id, tmp_path)  # trial 1 ran and ended
    running = _code.fetch(master, 2, old_id, "http://m:8080", tmp_path, 7)  # trial 2 runs
    (running.workdir / "written-by-the-trial").write_text("kept")
    eight_days_ago = time.time() - 8 * 86400
    trials = sorted((tmp_path / "trials").iterdir())
    for path in [tmp_path / "contexts" / f"{old_id}.tar.gz", *trials]:
        os.utime(path, (eight_days_ago, eight_days_ago))
    # A trial of another experiment starts: trial 1's directory and the old snapshot go;
    # trial 2 has run for eight days and keeps its directory.
    new_archive = _archive({"new.py": b"y"})
    new_id = hashlib.sha256(new_archive).hexdigest()
    _fetch_and_end(StandInMaster(archive=new_archive), 3, new_id, tmp_path)
    assert [p for p in trials if p.exists()] == [running.workdir.parent]
    assert (running.workdir / "written-by-the-trial").read_text() == "kept"
    assert sorted(p.name for p in (tmp_path / "contexts").glob("*.tar.gz")) == [f"{new_id}.tar.gz"]


def test_the_days_a_node_keeps_its_cache_come_from_the_environment():
    assert _code.keep_days({}) == _code.KEEP_DAYS
    assert _code.keep_days({"SHIPYARD_CACHE_KEEP_DAYS": "30"}) == 30
    assert _code.keep_days({"SHIPYARD_CACHE_KEEP_DAYS": "soon"}) == _code.KEEP_DAYS
    # One experiment's setting cannot empty the cache the node's other trials use.
    assert _code.keep_days({"SHIPYARD_CACHE_KEEP_DAYS": "0"}) == _code.MIN_KEEP_DAYS


def test_a_changed_archive_is_refused_and_not_cached(tmp_path):
    archive = _archive({"train.py": b"x"})
    wrong_id = hashlib.sha256(b"something else").hexdigest()
    with pytest.raises(_code.CodeFetchError, match="changed on the way"):
        _code.fetch(StandInMaster(archive=archive), 7, wrong_id, "http://m:8080", tmp_path, 7)
    assert not list(tmp_path.rglob("*.tar.gz"))


@pytest.mark.parametrize(
    ("files", "link"),
    [({"../escape.py": b"x"}, None), ({"a.py": b"x"}, ("data", "../../etc"))],
    ids=["dot-dot", "link-out"],
)
def test_members_pointing_outside_are_refused_on_a_python_without_filters(
    tmp_path, monkeypatch, files, link
):
    """Debian 12's python3 (3.11.2) has no tarfile filters: the entry checks by hand."""
    monkeypatch.delattr(tarfile, "data_filter", raising=False)
    archive = tmp_path / "code.tar.gz"
    archive.write_bytes(_archive(files, link))
    with pytest.raises(_code.CodeFetchError, match="points outside it"):
        _code._unpack(archive, tmp_path / "work")
    assert not (tmp_path / "escape.py").exists()


def test_the_cache_is_in_a_writable_place_without_a_home(monkeypatch):
    assert _code.cache_dir({"SHIPYARD_CACHE_DIR": "/c"}) == Path("/c")
    assert _code.cache_dir({"XDG_CACHE_HOME": "/x"}) == Path("/x/shipyard")
    assert str(_code.cache_dir({"HOME": "/"})).startswith("/tmp/shipyard-cache-")
