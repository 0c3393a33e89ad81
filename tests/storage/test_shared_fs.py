"""Checkpoint storage on a directory: a checkpoint exists only once its manifest is written."""

from __future__ import annotations

import json

import pytest

from shipyard.common.errors import ConfigError, Conflict, InvalidRequest, NotFound, NotSupportedYet
from shipyard.storage import SharedFSStorage, storage_from_dict


def write_checkpoint(storage: SharedFSStorage, uuid: str) -> None:
    path = storage.store_path(uuid)
    (path / "model.bin").write_bytes(b"x" * 1234)
    (path / "opt").mkdir()
    (path / "opt" / "state.json").write_text('{"lr": 0.1}')


def test_store_finalize_restore(tmp_path):
    storage = SharedFSStorage(tmp_path)
    write_checkpoint(storage, "ck-1")

    resources = storage.finalize("ck-1", {"epoch": 3}, steps_completed=300)

    assert resources == {"model.bin": 1234, "opt/state.json": 11}
    restored = storage.restore_path("ck-1")
    assert restored == tmp_path / "ck-1"
    assert (restored / "model.bin").read_bytes() == b"x" * 1234
    metadata = json.loads((restored / "metadata.json").read_text())
    assert metadata == {
        "epoch": 3,
        "uuid": "ck-1",
        "steps_completed": 300,
        "resources": {"model.bin": 1234, "opt/state.json": 11},
    }
    assert storage.read_metadata("ck-1") == metadata
    assert storage.list_complete() == ["ck-1"]


def test_steps_completed_defaults_to_the_metadata_value(tmp_path):
    storage = SharedFSStorage(tmp_path)
    storage.store_path("a")
    storage.finalize("a", {"steps_completed": 42})
    storage.store_path("b")
    storage.finalize("b", {})
    assert storage.read_metadata("a")["steps_completed"] == 42
    assert storage.read_metadata("b")["steps_completed"] == 0


def test_half_written_checkpoint_is_not_restorable_nor_listed(tmp_path):
    storage = SharedFSStorage(tmp_path)
    write_checkpoint(storage, "done")
    storage.finalize("done", {})
    write_checkpoint(storage, "half")  # crashed before finalize: no metadata.json

    assert not storage.is_complete("half")
    assert storage.list_complete() == ["done"]
    with pytest.raises(NotFound, match="half"):
        storage.restore_path("half")
    with pytest.raises(NotFound):
        storage.read_metadata("half")
    with pytest.raises(NotFound):
        storage.download("half", tmp_path / "out")


def test_missing_checkpoint_is_not_found(tmp_path):
    storage = SharedFSStorage(tmp_path / "never-created")
    assert storage.list_complete() == []
    with pytest.raises(NotFound, match="nope"):
        storage.restore_path("nope")


def test_delete_removes_files_and_is_idempotent(tmp_path):
    storage = SharedFSStorage(tmp_path)
    write_checkpoint(storage, "ck")
    storage.finalize("ck", {})

    storage.delete("ck")
    storage.delete("ck")

    assert not (tmp_path / "ck").exists()
    assert storage.list_complete() == []


def test_a_finalized_checkpoint_cannot_be_overwritten(tmp_path):
    storage = SharedFSStorage(tmp_path)
    storage.store_path("ck")
    storage.finalize("ck", {})
    with pytest.raises(Conflict):
        storage.store_path("ck")
    with pytest.raises(Conflict):
        storage.finalize("ck", {})


def test_user_file_named_like_the_manifest_is_refused(tmp_path):
    storage = SharedFSStorage(tmp_path)
    (storage.store_path("ck") / "metadata.json").write_text("{}")
    with pytest.raises(Conflict, match="save yours under another name"):
        storage.finalize("ck", {})


def test_metadata_must_be_json(tmp_path):
    storage = SharedFSStorage(tmp_path)
    storage.store_path("ck")
    with pytest.raises(TypeError, match="JSON"):
        storage.finalize("ck", {"when": object()})
    assert not storage.is_complete("ck")


@pytest.mark.parametrize("bad", ["", "..", "a/b", "../escape"])
def test_uuid_must_be_a_plain_name(tmp_path, bad):
    with pytest.raises(InvalidRequest):
        SharedFSStorage(tmp_path).store_path(bad)


def test_upload_and_download_copy_trees(tmp_path):
    source = tmp_path / "src"
    (source / "sub").mkdir(parents=True)
    (source / "weights").write_bytes(b"abc")
    (source / "sub" / "note.txt").write_text("hi")
    (source / "metadata.json").write_text('{"old": true}')  # e.g. a downloaded checkpoint
    storage = SharedFSStorage(tmp_path / "store")

    storage.upload(source, "up")
    resources = storage.finalize("up", {"tag": "copy"})
    storage.download("up", tmp_path / "dst")

    assert resources == {"sub/note.txt": 2, "weights": 3}
    assert (tmp_path / "dst" / "weights").read_bytes() == b"abc"
    assert (tmp_path / "dst" / "sub" / "note.txt").read_text() == "hi"
    assert json.loads((tmp_path / "dst" / "metadata.json").read_text())["tag"] == "copy"


def test_upload_of_a_missing_directory_says_so(tmp_path):
    with pytest.raises(InvalidRequest, match="not a directory"):
        SharedFSStorage(tmp_path).upload(tmp_path / "nothing", "ck")


def test_storage_from_dict(tmp_path):
    for kind in ("shared_fs", "directory"):
        storage = storage_from_dict({"type": kind, "base_path": str(tmp_path)})
        assert isinstance(storage, SharedFSStorage)
        assert storage.base_path == tmp_path
    determined = storage_from_dict(
        {"type": "shared_fs", "host_path": str(tmp_path), "storage_path": "ckpts"}
    )
    assert determined.base_path == tmp_path / "ckpts"


@pytest.mark.parametrize("kind", ["s3", "gcs", "azure"])
def test_cloud_storage_is_not_supported_yet(kind):
    with pytest.raises(NotSupportedYet, match=kind):
        storage_from_dict({"type": kind, "bucket": "b"})


@pytest.mark.parametrize(
    ("config", "path"),
    [
        ({"type": "ftp", "base_path": "/x"}, "checkpoint_storage.type"),
        ({"type": "shared_fs"}, "checkpoint_storage.base_path"),
        ({"type": "shared_fs", "base_path": "relative/dir"}, "checkpoint_storage.base_path"),
    ],
)
def test_bad_storage_config_names_the_field(config, path):
    with pytest.raises(ConfigError) as caught:
        storage_from_dict(config)
    assert caught.value.details[0]["path"] == path
