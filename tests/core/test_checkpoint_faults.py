"""ctx.checkpoint when storage fails: a full or read-only disk, for real (see small_disk).

What must hold: the error names the checkpoint's path and the OS error, the partial
checkpoint is gone, and the previous checkpoint is still the latest and restorable.
"""

from __future__ import annotations

import errno
import json

import pytest

import shipyard.core
from shipyard.core import CheckpointWriteError
from tests.fixtures.small_disk import fill_disk, make_read_only

DISK_BYTES = 256 * 1024


@pytest.fixture
def store(small_disk, monkeypatch):
    """Local-mode checkpoints on a 256 KiB disk; yields (ctx, base path)."""
    base = small_disk(DISK_BYTES) / "checkpoints"
    storage = {"type": "shared_fs", "base_path": str(base)}
    monkeypatch.setenv("SHIPYARD_CHECKPOINT_STORAGE", json.dumps(storage))
    with shipyard.core.init() as ctx:
        yield ctx, base


def _first_checkpoint(ctx) -> str:
    with ctx.checkpoint.store_path({"steps_completed": 5}) as (path, uuid):
        (path / "state.json").write_text(json.dumps({"step": 5}))
    return uuid


def _assert_first_is_still_the_latest(ctx, base, first: str) -> None:
    assert sorted(p.name for p in base.iterdir()) == [first]  # nothing half-written left
    assert ctx.info.latest_checkpoint == first
    with ctx.checkpoint.restore_path(first) as path:
        assert json.loads((path / "state.json").read_text()) == {"step": 5}


def test_files_that_do_not_fit_fail_the_store_naming_the_path(store):
    ctx, base = store
    first = _first_checkpoint(ctx)

    with pytest.raises(CheckpointWriteError) as raised:
        with ctx.checkpoint.store_path({"steps_completed": 10}) as (path, uuid):
            (path / "weights.bin").write_bytes(b"w" * 2 * DISK_BYTES)

    message = str(raised.value)
    assert message.startswith(
        f"cannot write checkpoint {uuid} to {base / uuid}: [Errno 28] No space left on device"
    )
    assert raised.value.errno == errno.ENOSPC
    assert isinstance(raised.value, OSError)  # code that caught the OSError still does
    assert isinstance(raised.value.__cause__, OSError)
    _assert_first_is_still_the_latest(ctx, base, first)
    # The partial files are gone, so the next checkpoint fits again.
    with ctx.checkpoint.store_path({"steps_completed": 10}) as (path, uuid):
        (path / "state.json").write_text(json.dumps({"step": 10}))
    assert ctx.info.latest_checkpoint == uuid


def test_metadata_that_does_not_fit_fails_the_store(store):
    ctx, base = store
    first = _first_checkpoint(ctx)

    with pytest.raises(CheckpointWriteError) as raised:
        with ctx.checkpoint.store_path({"steps_completed": 10}) as (path, uuid):
            (path / "state.json").write_text(json.dumps({"step": 10}))
            ballast = fill_disk(base.parent)  # the user's files fit, metadata.json will not

    assert str(raised.value).startswith(
        f"cannot write checkpoint {uuid} to {base / uuid}: [Errno 28] No space left on device"
    )
    _assert_first_is_still_the_latest(ctx, base, first)
    ballast.unlink()


def test_a_read_only_disk_fails_the_store_at_its_directory(small_disk, monkeypatch):
    disk = small_disk(DISK_BYTES)
    base = disk / "checkpoints"
    monkeypatch.setenv(
        "SHIPYARD_CHECKPOINT_STORAGE", json.dumps({"type": "shared_fs", "base_path": str(base)})
    )
    with shipyard.core.init() as ctx:
        first = _first_checkpoint(ctx)
        make_read_only(disk)

        with pytest.raises(CheckpointWriteError) as raised:
            with ctx.checkpoint.store_path({"steps_completed": 10}):
                pytest.fail("the body must not run when the directory cannot be made")

        uuid = str(raised.value).split()[3]
        assert str(raised.value) == (
            f"cannot write checkpoint {uuid} to {base / uuid}: "
            f"[Errno 30] Read-only file system: '{base / uuid}'"
        )
        assert raised.value.errno == errno.EROFS
        _assert_first_is_still_the_latest(ctx, base, first)


def test_an_upload_that_does_not_fit_fails_naming_the_path(store, tmp_path):
    ctx, base = store
    first = _first_checkpoint(ctx)
    source = tmp_path / "trained"
    source.mkdir()
    (source / "model.pt").write_bytes(b"m" * 2 * DISK_BYTES)

    with pytest.raises(CheckpointWriteError) as raised:
        ctx.checkpoint.upload(source, steps_completed=10)

    uuid = str(raised.value).split()[3]
    assert str(raised.value).startswith(
        f"cannot write checkpoint {uuid} to {base / uuid}: [Errno 28] No space left on device"
    )
    assert str(source / "model.pt") in str(raised.value)  # which file did not fit
    _assert_first_is_still_the_latest(ctx, base, first)


def test_other_errors_in_the_block_pass_through_unchanged(store):
    ctx, base = store
    first = _first_checkpoint(ctx)
    original = ValueError("the user's own bug")

    with pytest.raises(ValueError) as raised:
        with ctx.checkpoint.store_path({"steps_completed": 10}) as (path, _uuid):
            (path / "state.json").write_text("{}")
            raise original

    assert raised.value is original
    _assert_first_is_still_the_latest(ctx, base, first)
