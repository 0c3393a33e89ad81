"""Checkpoint archives and file links from the master are unpacked or fetched without
escaping the target directory."""

from __future__ import annotations

import io
import re
import tarfile

import pytest

from shipyard.client.checkpoints import fetch_links
from shipyard.common.api import CheckpointFileLink, CheckpointLinks
from shipyard.common.archives import safe_extract_tar
from shipyard.common.errors import InvalidRequest


def make_tar(*members: tuple[str, bytes], symlink: tuple[str, str] | None = None) -> io.BytesIO:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for name, content in members:
            info = tarfile.TarInfo(name)
            info.size = len(content)
            tar.addfile(info, io.BytesIO(content))
        if symlink:
            info = tarfile.TarInfo(symlink[0])
            info.type = tarfile.SYMTYPE
            info.linkname = symlink[1]
            tar.addfile(info)
    buffer.seek(0)
    return buffer


def test_regular_archive_is_unpacked(tmp_path):
    dest = tmp_path / "ckpt"
    files = safe_extract_tar(make_tar(("model.pt", b"weights"), ("sub/state.json", b"{}")), dest)
    assert sorted(files) == ["model.pt", "sub/state.json"]
    assert (dest / "model.pt").read_bytes() == b"weights"
    assert (dest / "sub/state.json").read_text() == "{}"


@pytest.mark.parametrize("evil", ["../escaped.txt", "sub/../../escaped.txt", "/tmp/escaped.txt"])
def test_member_outside_the_target_is_refused_and_nothing_is_written(tmp_path, evil):
    dest = tmp_path / "ckpt"
    archive = make_tar(("fine.txt", b"ok"), (evil, b"pwned"))
    with pytest.raises(InvalidRequest, match="outside the target directory"):
        safe_extract_tar(archive, dest)
    assert not (tmp_path / "escaped.txt").exists()
    assert not dest.exists()


def test_symlink_pointing_outside_is_refused(tmp_path):
    archive = make_tar(("fine.txt", b"ok"), symlink=("link", "/etc/passwd"))
    with pytest.raises(InvalidRequest, match="refused"):
        safe_extract_tar(archive, tmp_path / "ckpt")


def test_garbage_is_a_clear_error(tmp_path):
    with pytest.raises(InvalidRequest, match="not a readable tar"):
        safe_extract_tar(io.BytesIO(b"this is not a tar"), tmp_path / "ckpt")


@pytest.mark.parametrize("evil", ["../escape.txt", "/etc/escape.txt", "\\escape.txt", ""])
def test_a_link_outside_the_target_is_refused_before_any_download(tmp_path, evil):
    # The first link is fine: nothing is fetched (its URL would fail) nor written at all.
    files = [
        CheckpointFileLink(path="weights.bin", size=1, url="http://127.0.0.1:9/never"),
        CheckpointFileLink(path=evil, size=1, url="http://127.0.0.1:9/never"),
    ]
    dest = tmp_path / "dest"
    with pytest.raises(InvalidRequest, match=re.escape(f"refusing file path {evil!r}")):
        fetch_links(CheckpointLinks(uuid="u-1", direct=True, files=files), dest)
    assert not dest.exists()
    assert list(tmp_path.iterdir()) == []
