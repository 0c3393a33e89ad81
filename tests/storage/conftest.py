from __future__ import annotations

import pytest

from shipyard.storage import CheckpointStorage, SharedFSStore
from tests.storage.memory_store import MemoryStore


@pytest.fixture(params=["shared_fs", "memory", "s3"])
def storage(request, tmp_path) -> CheckpointStorage:
    """The checkpoint layer on each store: a directory (written in place), a store with
    nothing but the five operations (written through a staging directory), and a bucket
    of a real S3 server (tests/fixtures/s3.py)."""
    if request.param == "shared_fs":
        return CheckpointStorage(SharedFSStore(tmp_path / "store"))
    if request.param == "s3":
        from shipyard.storage.s3 import S3Location, S3Store

        server = request.getfixturevalue("s3_server")
        bucket = request.getfixturevalue("s3_bucket")
        where = S3Location(
            bucket=bucket,
            prefix="exp-1/checkpoints",
            endpoint_url=server.endpoint_url,
            access_key=server.access_key,
            secret_key=server.secret_key,
        )
        return CheckpointStorage(S3Store(where))
    return CheckpointStorage(MemoryStore())
