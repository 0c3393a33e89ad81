"""The S3 store on a real S3 server (SeaweedFS, tests/fixtures/s3.py): what the checkpoint
layer adds for it (unchanged files copied inside the bucket, not sent again), and the errors
a user gets for a bucket, credentials or an endpoint that do not work."""

from __future__ import annotations

import os

import pytest

from shipyard.storage import CheckpointStorage, storage_from_spec
from shipyard.storage.s3 import S3Location, S3Store, StoreError

FILE = 256 * 1024


def s3_storage(s3_server, existing_bucket: str, **change) -> CheckpointStorage:
    fields = {
        "bucket": existing_bucket,
        "prefix": "p",
        "endpoint_url": s3_server.endpoint_url,
        "access_key": s3_server.access_key,
        "secret_key": s3_server.secret_key,
        **change,
    }
    return CheckpointStorage(S3Store(S3Location(**fields), connect_timeout=2, retries=1))


def write(storage: CheckpointStorage, uuid: str, files: dict[str, bytes]) -> None:
    path = storage.store_path(uuid)
    for name, data in files.items():
        (path / name).parent.mkdir(parents=True, exist_ok=True)
        (path / name).write_bytes(data)
    storage.finalize(uuid, {})


def test_a_checkpoint_sends_only_the_files_changed_since_the_previous_one(s3_server, s3_bucket):
    files = {f"shard-{i}.bin": os.urandom(FILE) for i in range(10)}
    trial = s3_storage(s3_server, s3_bucket)
    write(trial, "ck-1", files)
    assert trial.sent_bytes == 10 * FILE

    files["shard-0.bin"] = os.urandom(FILE)  # 10 % of the bytes change
    write(trial, "ck-2", files)
    assert trial.sent_bytes - 10 * FILE == FILE

    # A trial that resumes (a new process) compares with the checkpoint it restored.
    resumed = s3_storage(s3_server, s3_bucket)
    with resumed.restore_path("ck-2"):
        pass
    files["shard-1.bin"] = os.urandom(FILE)
    write(resumed, "ck-3", files)
    assert resumed.sent_bytes == FILE

    # Each checkpoint holds its own copy: deleting the older ones loses nothing.
    trial.delete("ck-1")
    trial.delete("ck-2")
    with trial.restore_path("ck-3") as path:
        assert {p.name: p.read_bytes() for p in path.glob("shard-*")} == files


def test_the_spec_a_trial_gets_opens_the_same_bucket(s3_server, s3_bucket):
    spec = {
        "type": "s3",
        "bucket": s3_bucket,
        "prefix": "exp-7",
        "endpoint_url": s3_server.endpoint_url,
        "access_key": s3_server.access_key,
        "secret_key": s3_server.secret_key,
    }
    write(storage_from_spec(spec), "ck", {"model.bin": b"m" * 10})
    listed = s3_server.client().list_objects_v2(Bucket=s3_bucket)["Contents"]
    assert sorted(item["Key"] for item in listed) == [
        "exp-7/ck/metadata.json",
        "exp-7/ck/model.bin",
    ]
    assert storage_from_spec(spec).list_complete() == ["ck"]


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"bucket": "missing-bucket"}, "the bucket does not exist"),
        ({"secret_key": "not-the-key"}, "secret_key"),
        ({"endpoint_url": "http://127.0.0.1:9"}, "could not connect"),
    ],
)
def test_an_unusable_bucket_says_why(s3_server, s3_bucket, change, words):
    storage = s3_storage(s3_server, s3_bucket, **change)
    with pytest.raises(StoreError, match="(?i)" + words) as caught:
        storage.store.check_access()
    assert s3_server.secret_key not in str(caught.value)
    with pytest.raises(OSError):
        write(storage, "ck", {"model.bin": b"m"})
