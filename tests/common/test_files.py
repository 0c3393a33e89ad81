"""shipyard.common.files: the small state files backends and storage read and replace."""

from __future__ import annotations

import os
import stat

import pytest

from shipyard.common.files import read_from, read_int, write_atomically, write_private_files


def test_read_int_is_none_for_a_missing_empty_or_garbled_file(tmp_path):
    path = tmp_path / "exit"
    assert read_int(path) is None
    path.write_text("")
    assert read_int(path) is None
    path.write_text("12x\n")
    assert read_int(path) is None
    path.write_text(" -9\n")
    assert read_int(str(path)) == -9


def test_read_from_reads_at_most_the_limit_from_the_offset(tmp_path):
    path = tmp_path / "log"
    assert read_from(path, 0, 10) == b""
    path.write_bytes(b"0123456789")
    assert read_from(path, 3, 4) == b"3456"
    assert read_from(path, 8, 4) == b"89"
    assert read_from(path, 20, 4) == b""


def test_write_atomically_replaces_the_file_with_its_mode_and_leaves_no_temporary(tmp_path):
    path = tmp_path / "job.sbatch"
    path.write_text("old")
    write_atomically(path, "secret\n", mode=0o600)
    assert path.read_text() == "secret\n"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    write_atomically(path, "durable\n", durable=True)
    assert path.read_text() == "durable\n"
    assert os.listdir(tmp_path) == ["job.sbatch"]


def test_private_files_are_for_their_owner_alone_and_stay_inside(tmp_path):
    directory = tmp_path / "secrets"
    write_private_files(directory, {"key.json": "k", "gcp/sa.json": "s"})
    assert (directory / "gcp" / "sa.json").read_text() == "s"
    for path in (directory, directory / "gcp"):
        assert stat.S_IMODE(path.stat().st_mode) == 0o700
    for path in (directory / "key.json", directory / "gcp" / "sa.json"):
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
    for outside in ("../escape", "/etc/escape"):
        with pytest.raises(ValueError, match="points outside"):
            write_private_files(tmp_path / "other", {outside: "x"})
    assert not (tmp_path / "escape").exists()
