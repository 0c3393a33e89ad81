"""Checkpoint writes against their peers, in one run on one machine, as one JSON object.

- S3 (a SeaweedFS server started here, tests/fixtures/s3.py): Shipyard's checkpoint write
  (stage, hash, put several files at once, manifest last) against boto3's own
  ``upload_file`` with its default transfer settings, file after file, of the same files:
  a large checkpoint (LARGE_MB in 20 files) and one of 2,000 small files. Targets: our
  throughput >= 0.8 of boto3's for both.
- Re-saving a checkpoint with 90 % of its bytes unchanged: bytes sent / checkpoint size,
  target <= 0.12.
- shared_fs: the same large checkpoint written through the checkpoint layer against a plain
  ``shutil.copytree`` of the same bytes on the same disk; target >= 0.9.

Rounds alternate the contenders so a noisy neighbour hurts both; medians are compared.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # tests.fixtures.s3 starts the S3 server

from tests.fixtures.s3 import S3Server, seaweedfs_server  # noqa: E402

from shipyard.storage import CheckpointStorage, storage_at  # noqa: E402
from shipyard.storage.s3 import S3Location, S3Store  # noqa: E402

LARGE_MB = int(os.environ.get("SHIPYARD_BENCH_CHECKPOINT_MB", "1024"))
ROUNDS = int(os.environ.get("SHIPYARD_BENCH_ROUNDS", "3"))
SMALL_FILES, SMALL_BYTES = 2000, 8 * 1024


def make_files(root: Path, count: int, size: int) -> Path:
    root.mkdir(parents=True)
    for i in range(count):
        (root / f"part-{i:04d}.bin").write_bytes(os.urandom(size))
    return root


def timed(action: Callable[[], None]) -> float:
    start = time.perf_counter()
    action()
    return time.perf_counter() - start


def s3_storage(server: S3Server, bucket: str) -> CheckpointStorage:
    where = S3Location(
        bucket=bucket,
        endpoint_url=server.endpoint_url,
        access_key=server.access_key,
        secret_key=server.secret_key,
    )
    return CheckpointStorage(S3Store(where))


def compare_s3(server: S3Server, files: Path, total: int) -> dict:
    bucket = server.new_bucket()
    client = server.client()
    ours, peer = [], []
    for r in range(ROUNDS):
        storage = s3_storage(server, bucket)  # a fresh trial: nothing to copy from

        def shipyard_write(uuid: str = f"ours-{r}", storage: CheckpointStorage = storage) -> None:
            storage.upload(files, uuid)
            storage.finalize(uuid, {})

        def boto3_upload(prefix: str = f"boto3-{r}") -> None:
            for path in sorted(files.iterdir()):
                client.upload_file(str(path), bucket, f"{prefix}/{path.name}")

        ours.append(timed(shipyard_write))
        peer.append(timed(boto3_upload))
        storage.delete(f"ours-{r}")
        storage.store.delete(f"boto3-{r}")
    ours_s, peer_s = statistics.median(ours), statistics.median(peer)
    return {
        "bytes": total,
        "shipyard_s": round(ours_s, 3),
        "boto3_upload_file_s": round(peer_s, 3),
        "shipyard_mb_s": round(total / ours_s / 1e6, 1),
        "boto3_mb_s": round(total / peer_s / 1e6, 1),
        "throughput_ratio": round(peer_s / ours_s, 3),
        "target_ratio": 0.8,
    }


def resave_ratio(server: S3Server, files: Path, total: int, scratch: Path) -> dict:
    storage = s3_storage(server, server.new_bucket())
    storage.upload(files, "first")
    storage.finalize("first", {})
    sent_before = storage.sent_bytes
    changed = scratch / "changed"
    shutil.copytree(files, changed)
    names = sorted(changed.iterdir())
    for path in names[: max(1, len(names) // 10)]:  # 10 % of the files (and bytes)
        path.write_bytes(os.urandom(path.stat().st_size))
    storage.upload(changed, "second")
    storage.finalize("second", {})
    sent = storage.sent_bytes - sent_before
    return {"bytes": total, "sent": sent, "sent_ratio": round(sent / total, 3), "target": 0.12}


def compare_shared_fs(files: Path, total: int, scratch: Path) -> dict:
    ours, peer = [], []
    for r in range(ROUNDS):
        storage = storage_at(scratch / "store")

        def shipyard_write(uuid: str = f"ours-{r}", storage: CheckpointStorage = storage) -> None:
            storage.upload(files, uuid)
            storage.finalize(uuid, {})

        ours.append(timed(shipyard_write))
        peer.append(timed(lambda r=r: shutil.copytree(files, scratch / f"copy-{r}")))
        storage.delete(f"ours-{r}")
        shutil.rmtree(scratch / f"copy-{r}")
    ours_s, peer_s = statistics.median(ours), statistics.median(peer)
    return {
        "bytes": total,
        "shipyard_s": round(ours_s, 3),
        "copytree_s": round(peer_s, 3),
        "throughput_ratio": round(peer_s / ours_s, 3),
        "target_ratio": 0.9,
    }


def main() -> None:
    scratch = Path(tempfile.mkdtemp(prefix="shipyard-bench-ckpt-"))
    try:
        large_size = LARGE_MB * 1024 * 1024 // 20
        large = make_files(scratch / "large", 20, large_size)
        small = make_files(scratch / "small", SMALL_FILES, SMALL_BYTES)
        result: dict = {"rounds": ROUNDS}
        with seaweedfs_server() as server:
            result["s3_large_20_files"] = compare_s3(server, large, 20 * large_size)
            result["s3_small_2000_files"] = compare_s3(server, small, SMALL_FILES * SMALL_BYTES)
            result["s3_resave_90pct_unchanged"] = resave_ratio(
                server, large, 20 * large_size, scratch
            )
        result["shared_fs_large_20_files"] = compare_shared_fs(large, 20 * large_size, scratch)
        print(json.dumps(result, indent=2))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
