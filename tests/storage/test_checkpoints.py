"""The checkpoint layer on every store: a checkpoint exists only once its manifest is written.

Each test runs on the directory store and on the in-memory one (conftest.storage)."""

from __future__ import annotations

import hashlib
import json
from unittest.mock import ANY

import pytest

from shipyard.common.errors import Conflict, InvalidRequest, NotFound
from shipyard.storage import CheckpointStorage
from tests.storage.memory_store import MemoryStore


def write_checkpoint(storage: CheckpointStorage, uuid: str) -> None:
    path = storage.store_path(uuid)
    (path / "model.bin").write_bytes(b"x" * 1234)
    (path / "opt").mkdir()
    (path / "opt" / "state.json").write_text('{"lr": 0.1}')


def test_store_finalize_restore(storage):
    write_checkpoint(storage, "ck-1")

    resources = storage.finalize("ck-1", {"epoch": 3}, steps_completed=300)

    assert resources == {"model.bin": 1234, "opt/state.json": 11}
    with storage.restore_path("ck-1") as restored:
        assert (restored / "model.bin").read_bytes() == b"x" * 1234
        metadata = json.loads((restored / "metadata.json").read_text())
    expected = {
        "epoch": 3,
        "uuid": "ck-1",
        "steps_completed": 300,
        "resources": {"model.bin": 1234, "opt/state.json": 11},
    }
    if storage.store.local_dir("ck-1") is None:  # put, not written in place: hashed
        expected["digests"] = {
            "model.bin": hashlib.sha256(b"x" * 1234).hexdigest(),
            "opt/state.json": hashlib.sha256(b'{"lr": 0.1}').hexdigest(),
        }
    assert metadata == expected
    assert storage.read_metadata("ck-1") == metadata
    assert storage.list_complete() == ["ck-1"]


def test_steps_completed_defaults_to_the_metadata_value(storage):
    storage.store_path("a")
    storage.finalize("a", {"steps_completed": 42})
    storage.store_path("b")
    storage.finalize("b", {})
    assert storage.read_metadata("a")["steps_completed"] == 42
    assert storage.read_metadata("b")["steps_completed"] == 0


def test_half_written_checkpoint_is_not_restorable_nor_listed(storage, tmp_path):
    write_checkpoint(storage, "done")
    storage.finalize("done", {})
    write_checkpoint(storage, "half")  # crashed before finalize: no metadata.json

    assert not storage.is_complete("half")
    assert storage.list_complete() == ["done"]
    with pytest.raises(NotFound, match="half"):
        with storage.restore_path("half"):
            pytest.fail("a half-written checkpoint must not be offered")
    with pytest.raises(NotFound):
        storage.read_metadata("half")
    with pytest.raises(NotFound):
        storage.download("half", tmp_path / "out")


def test_missing_checkpoint_is_not_found(storage):
    assert storage.list_complete() == []
    with pytest.raises(NotFound, match="nope"):
        with storage.restore_path("nope"):
            pytest.fail("a missing checkpoint must not be offered")


def test_delete_removes_files_and_is_idempotent(storage):
    write_checkpoint(storage, "ck")
    storage.finalize("ck", {})

    storage.delete("ck")
    storage.delete("ck")

    assert storage.store.list("ck") == {}
    assert storage.list_complete() == []


def test_deleting_a_half_written_checkpoint_removes_what_was_written(storage):
    write_checkpoint(storage, "half")
    storage.delete("half")
    assert storage.store.list("") == {}
    with pytest.raises(NotFound):
        storage.finalize("half", {})  # nothing left to make a checkpoint of


def test_a_finalized_checkpoint_cannot_be_overwritten(storage):
    storage.store_path("ck")
    storage.finalize("ck", {})
    with pytest.raises(Conflict):
        storage.store_path("ck")
    with pytest.raises(Conflict):
        storage.finalize("ck", {})


def test_user_file_named_like_the_manifest_is_refused(storage):
    (storage.store_path("ck") / "metadata.json").write_text("{}")
    with pytest.raises(Conflict, match="save yours under another name"):
        storage.finalize("ck", {})


def test_metadata_must_be_json(storage):
    storage.store_path("ck")
    with pytest.raises(TypeError, match="JSON"):
        storage.finalize("ck", {"when": object()})
    assert not storage.is_complete("ck")


@pytest.mark.parametrize("bad", ["", "..", "a/b", "../escape", ".writing"])
def test_uuid_must_be_a_plain_name(storage, bad):
    with pytest.raises(InvalidRequest):
        storage.store_path(bad)


def test_upload_and_download_copy_trees(storage, tmp_path):
    source = tmp_path / "src"
    (source / "sub").mkdir(parents=True)
    (source / "weights").write_bytes(b"abc")
    (source / "sub" / "note.txt").write_text("hi")
    (source / "metadata.json").write_text('{"old": true}')  # e.g. a downloaded checkpoint

    storage.upload(source, "up")
    resources = storage.finalize("up", {"tag": "copy"})
    storage.download("up", tmp_path / "dst")

    assert resources == {"sub/note.txt": 2, "weights": 3}
    assert (tmp_path / "dst" / "weights").read_bytes() == b"abc"
    assert (tmp_path / "dst" / "sub" / "note.txt").read_text() == "hi"
    assert json.loads((tmp_path / "dst" / "metadata.json").read_text())["tag"] == "copy"


def test_upload_of_a_missing_directory_says_so(storage, tmp_path):
    with pytest.raises(InvalidRequest, match="not a directory"):
        storage.upload(tmp_path / "nothing", "ck")


def test_writing_marks_name_the_owner_until_cleared(storage):
    storage.mark_writing("a", {"trial_id": 1, "run_id": 2})
    storage.mark_writing("b", {"trial_id": 3, "run_id": 1})
    write_checkpoint(storage, "a")
    storage.finalize("a", {})

    assert storage.writing() == {
        "a": {"trial_id": 1, "run_id": 2},
        "b": {"trial_id": 3, "run_id": 1},
    }
    assert storage.list_complete() == ["a"]  # a mark is not a checkpoint

    storage.clear_writing("a")
    storage.delete("b")  # deleting a checkpoint forgets its mark too
    assert storage.writing() == {}
    assert storage.list_complete() == ["a"]


def test_location_names_the_store_and_the_checkpoint(storage):
    assert storage.location("ck").startswith(str(storage.store))
    assert storage.location("ck").endswith("/ck")


def test_a_store_without_a_directory_gets_staged_files_and_leaves_no_scratch():
    storage = CheckpointStorage(MemoryStore())
    staging = storage.store_path("ck")
    (staging / "model.bin").write_bytes(b"m" * 10)
    assert storage.store.list("") == {}  # nothing is in the store before finalize

    storage.finalize("ck", {})

    assert not staging.exists()
    assert storage.store.list("ck") == {"ck/metadata.json": ANY, "ck/model.bin": 10}
    with storage.restore_path("ck") as restored:
        assert (restored / "model.bin").read_bytes() == b"m" * 10
    assert not restored.exists()  # the download was temporary
