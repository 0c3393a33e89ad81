"""ctx.checkpoint in local mode: store, restore, upload, download."""

from __future__ import annotations

import json

import pytest

import shipyard.core
from shipyard.common.errors import NotFound


@pytest.fixture
def ctx(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with shipyard.core.init() as context:
        yield context


def test_store_path_makes_a_checkpoint_and_the_latest(ctx, tmp_path):
    with ctx.checkpoint.store_path({"steps_completed": 20, "note": "ok"}) as (path, uuid):
        assert path == tmp_path / "checkpoints" / uuid
        (path / "state").write_bytes(b"12345678")

    metadata = ctx.checkpoint.read_metadata(uuid)
    assert metadata["steps_completed"] == 20
    assert metadata["note"] == "ok"
    assert metadata["resources"] == {"state": 8}
    assert ctx.info.latest_checkpoint == uuid


def test_a_failed_store_leaves_no_checkpoint(ctx, tmp_path):
    with pytest.raises(OSError):
        with ctx.checkpoint.store_path({}) as (path, uuid):
            (path / "part").write_text("half")
            raise OSError("disk full")

    assert not (tmp_path / "checkpoints" / uuid).exists()
    assert ctx.info.latest_checkpoint is None
    with pytest.raises(NotFound):
        with ctx.checkpoint.restore_path(uuid):
            pass


def test_metadata_is_checked_before_anything_is_written(ctx, tmp_path):
    with pytest.raises(TypeError, match="JSON-serializable"):
        with ctx.checkpoint.store_path({"model": object()}):
            pytest.fail("the body must not run")
    with pytest.raises(ValueError, match="steps_completed"):
        with ctx.checkpoint.store_path({}, steps_completed=-3):
            pytest.fail("the body must not run")


def test_restore_of_an_unknown_checkpoint_is_not_found(ctx):
    with pytest.raises(NotFound, match="no-such-uuid"):
        with ctx.checkpoint.restore_path("no-such-uuid"):
            pass


def test_upload_then_download(ctx, tmp_path):
    source = tmp_path / "trained"
    source.mkdir()
    (source / "model.pt").write_bytes(b"weights")

    uuid = ctx.checkpoint.upload(source, {"source": "manual"}, steps_completed=7)
    ctx.checkpoint.download(uuid, tmp_path / "copy")

    assert (tmp_path / "copy" / "model.pt").read_bytes() == b"weights"
    metadata = json.loads((tmp_path / "copy" / "metadata.json").read_text())
    assert metadata["steps_completed"] == 7
    assert metadata["source"] == "manual"
    assert ctx.info.latest_checkpoint == uuid
