"""The directory store: checkpoints are written and read in place, under <base_path>."""

from __future__ import annotations

import json

import pytest

from shipyard.common.errors import NotFound
from shipyard.storage import CheckpointStorage, SharedFSStore, storage_at
from tests.storage.test_checkpoints import write_checkpoint


def test_a_checkpoint_is_a_directory_written_and_restored_in_place(tmp_path):
    storage = storage_at(tmp_path)
    path = storage.store_path("ck-1")
    assert path == tmp_path / "ck-1"  # the trial writes straight into it: no copy
    write_checkpoint(storage, "ck-2")
    storage.finalize("ck-2", {"epoch": 3})

    with storage.restore_path("ck-2") as restored:
        assert restored == tmp_path / "ck-2"
    assert json.loads((tmp_path / "ck-2" / "metadata.json").read_text())["epoch"] == 3
    assert storage.location("ck-2") == str(tmp_path / "ck-2")


def test_missing_base_directory_lists_nothing(tmp_path):
    storage = storage_at(tmp_path / "never-created")
    assert storage.list_complete() == []
    assert storage.writing() == {}
    with pytest.raises(NotFound, match="nope"):
        with storage.restore_path("nope"):
            pytest.fail("a missing checkpoint must not be offered")


def test_delete_removes_the_directory(tmp_path):
    storage = storage_at(tmp_path)
    write_checkpoint(storage, "ck")
    storage.finalize("ck", {})
    storage.delete("ck")
    assert not (tmp_path / "ck").exists()


def test_writing_marks_are_files_beside_the_checkpoints(tmp_path):
    # The master and the chaos suite read them there (docs/architecture.md).
    storage = CheckpointStorage(SharedFSStore(tmp_path))
    storage.mark_writing("ck", {"trial_id": 1, "run_id": 1})
    mark = tmp_path / ".writing" / "ck.json"
    assert json.loads(mark.read_text()) == {"trial_id": 1, "run_id": 1}
    storage.clear_writing("ck")
    assert not mark.exists()


def test_a_put_replaces_a_file_whole(tmp_path):
    store = SharedFSStore(tmp_path)
    store.put("a/b.json", b"old")
    source = tmp_path / "new.bin"
    source.write_bytes(b"new content")
    store.put("a/b.json", source)
    with store.get("a/b.json") as f:
        assert f.read() == b"new content"
    assert store.list("a") == {"a/b.json": 11}  # no temporary file left beside it
