from __future__ import annotations

import pytest

from shipyard.storage import CheckpointStorage, SharedFSStore
from tests.storage.memory_store import MemoryStore


@pytest.fixture(params=["shared_fs", "memory"])
def storage(request, tmp_path) -> CheckpointStorage:
    """The checkpoint layer on each store: a directory (written in place) and a store with
    nothing but the five operations (written through a staging directory)."""
    if request.param == "shared_fs":
        return CheckpointStorage(SharedFSStore(tmp_path / "store"))
    return CheckpointStorage(MemoryStore())
