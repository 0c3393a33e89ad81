"""A trial's TensorBoard directory (ctx.train.get_tensorboard_path()) and the copy of its
files to the checkpoint storage (shipyard.core._tensorboard). A whole experiment read by a
real TensorBoard server is tests/e2e/test_tensorboard.py."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from shipyard.common.tensorboard_layout import trial_prefix
from shipyard.core._chief import WorkerTrain
from shipyard.core._tensorboard import Syncer, make_tensorboard
from shipyard.storage import SharedFSStore, Store
from tests.core.conftest import run_script

SCRIPT = """
import shipyard.core

with shipyard.core.init() as ctx:
    path = ctx.train.get_tensorboard_path()
    print("path", path, path.is_dir())
    for step in (1, 2):
        ctx.train.report_training_metrics(step, {"loss": 1.0 / step})
    ctx.train.report_metrics("test", 2, {"accuracy": 0.5})
"""


def _event_files(directory: Path) -> list[str]:
    return sorted(name for name in os.listdir(directory) if ".tfevents." in name)


def test_local_mode_gives_a_directory_and_writes_no_scalars_unless_asked(tmp_path):
    result = run_script(tmp_path, SCRIPT)

    assert result.returncode == 0, result.stderr
    assert f"path {tmp_path / 'tensorboard'} True" in result.stdout.splitlines()
    assert _event_files(tmp_path / "tensorboard") == []

    asked = run_script(tmp_path, SCRIPT, env={"SHIPYARD_TENSORBOARD": "1"})
    assert asked.returncode == 0, asked.stderr
    [name] = _event_files(tmp_path / "tensorboard")
    assert name.endswith(".shipyard")
    content = (tmp_path / "tensorboard" / name).read_bytes()
    assert b"training/loss" in content and b"test/accuracy" in content


def test_a_bad_switch_names_the_variable(tmp_path):
    result = run_script(tmp_path, SCRIPT, env={"SHIPYARD_TENSORBOARD": "yes"})
    assert result.returncode != 0
    assert 'SHIPYARD_TENSORBOARD must be "0" or "1"' in result.stderr


def test_each_rank_has_its_own_directory_and_only_the_chief_writes_scalars(tmp_path, monkeypatch):
    def made(rank: int, with_master: bool = True):
        return make_tensorboard(
            workdir=tmp_path,
            rank=rank,
            with_master=with_master,
            experiment_id=3,
            trial_id=7,
            store=lambda: SharedFSStore(tmp_path / "storage"),
        )

    unset = made(0)  # with a master, by default: the copy, and the chief writes scalars
    assert unset.writer is not None and unset.syncer is not None
    unset.close()
    local = made(0, with_master=False)
    assert local.writer is None and local.syncer is None
    monkeypatch.setenv("SHIPYARD_TENSORBOARD", "1")
    chief, rank_2 = made(0), made(2)
    try:
        assert chief.directory == tmp_path / "tensorboard" and chief.writer is not None
        assert (
            chief.syncer is not None and chief.syncer.prefix == "tensorboard/experiment-3/trial-7"
        )
        assert rank_2.directory == tmp_path / "tensorboard" / "rank-2" and rank_2.writer is None
        assert rank_2.syncer is not None
        assert rank_2.syncer.prefix == "tensorboard/experiment-3/trial-7/rank-2"
    finally:
        chief.close()
        rank_2.close()

    monkeypatch.setenv("SHIPYARD_TENSORBOARD", "0")
    off = made(0)
    assert off.writer is None and off.syncer is None and off.path() == chief.directory

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SHIPYARD_RANK", "1")
    assert WorkerTrain().get_tensorboard_path() == tmp_path / "tensorboard" / "rank-1"


@pytest.fixture(params=["shared_fs", "s3"])
def store(request, tmp_path) -> Store:
    """A directory (grown files get their new bytes appended) and a real S3 bucket (sent
    whole)."""
    if request.param == "shared_fs":
        return SharedFSStore(tmp_path / "storage")
    from shipyard.storage.s3 import S3Location, S3Store

    server = request.getfixturevalue("s3_server")
    where = S3Location(
        bucket=request.getfixturevalue("s3_bucket"),
        prefix="checkpoints",
        endpoint_url=server.endpoint_url,
        access_key=server.access_key,
        secret_key=server.secret_key,
    )
    return S3Store(where)


def _stored(store: Store, prefix: str) -> dict[str, bytes]:
    found = {}
    for key in store.list(prefix):
        with store.get(key) as content:
            found[key.removeprefix(prefix + "/")] = content.read()
    return found


def test_new_and_grown_files_are_copied_and_nothing_is_removed(tmp_path, store):
    prefix = trial_prefix(1, 2, 0)
    local = tmp_path / "run" / "tensorboard"
    (local / "user").mkdir(parents=True)
    (local / "rank-1").mkdir()
    (local / "events.out.tfevents.1.host.shipyard").write_bytes(b"first")
    (local / "user" / "events.out.tfevents.2.host").write_bytes(b"mine")
    (local / "rank-1" / "events.out.tfevents.3.host").write_bytes(b"rank 1's")
    (local / ".events.out.tfevents.4.host.tmp").write_bytes(b"a writer's temporary file")
    syncer = Syncer(local, lambda: store, prefix, skip_rank_dirs=True, interval_s=3600)
    try:
        assert syncer.sync_once() == 2
        assert _stored(store, prefix) == {
            "events.out.tfevents.1.host.shipyard": b"first",
            "user/events.out.tfevents.2.host": b"mine",
        }
        assert syncer.sync_once() == 0  # nothing changed

        with open(local / "events.out.tfevents.1.host.shipyard", "ab") as grown:
            grown.write(b" and more")
        assert syncer.sync_once() == 1
        assert _stored(store, prefix)["events.out.tfevents.1.host.shipyard"] == b"first and more"
    finally:
        syncer.close()

    # The rank's own syncer copies its directory (it may be on another node).
    rank_1 = Syncer(local / "rank-1", lambda: store, trial_prefix(1, 2, 1), skip_rank_dirs=False)
    rank_1.close()
    assert _stored(store, prefix)["rank-1/events.out.tfevents.3.host"] == b"rank 1's"

    # A restarted run in the same working directory sends only what changed; one on a
    # fresh node (an empty directory) adds its files and removes none.
    (local / "events.out.tfevents.9.host.shipyard").write_bytes(b"second run")
    resumed = Syncer(local, lambda: store, prefix, skip_rank_dirs=True)
    assert resumed.sync_once() == 1
    resumed.close()
    fresh = tmp_path / "fresh" / "tensorboard"
    fresh.mkdir(parents=True)
    (fresh / "events.out.tfevents.10.other.shipyard").write_bytes(b"third run")
    Syncer(fresh, lambda: store, prefix, skip_rank_dirs=True).close()
    assert _stored(store, prefix) == {
        "events.out.tfevents.1.host.shipyard": b"first and more",
        "events.out.tfevents.9.host.shipyard": b"second run",
        "events.out.tfevents.10.other.shipyard": b"third run",
        "user/events.out.tfevents.2.host": b"mine",
        "rank-1/events.out.tfevents.3.host": b"rank 1's",
    }


def test_a_kick_syncs_soon_and_close_syncs_once_more(tmp_path):
    store = SharedFSStore(tmp_path / "storage")
    local = tmp_path / "tensorboard"
    local.mkdir()
    syncer = Syncer(local, lambda: store, "tb", skip_rank_dirs=True, interval_s=3600)
    (local / "a").write_bytes(b"1")
    syncer.kick()
    deadline = time.monotonic() + 10
    while syncer.passes < 1 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert (tmp_path / "storage" / "tb" / "a").read_bytes() == b"1"

    (local / "b").write_bytes(b"2")
    syncer.close(timeout_s=10)
    assert (tmp_path / "storage" / "tb" / "b").read_bytes() == b"2"


def test_a_failing_copy_is_said_once_and_retried(tmp_path, capsys):
    local = tmp_path / "tensorboard"
    local.mkdir()
    (local / "a").write_bytes(b"1")
    blocker = tmp_path / "storage"
    blocker.write_text("a file where the storage's directory should be")
    syncer = Syncer(
        local, lambda: SharedFSStore(blocker), "tb", skip_rank_dirs=True, interval_s=0.01
    )
    deadline = time.monotonic() + 10
    while syncer.passes < 3 and time.monotonic() < deadline:
        time.sleep(0.01)
    blocker.unlink()
    syncer.close(timeout_s=10)

    assert (blocker / "tb" / "a").read_bytes() == b"1"
    said = capsys.readouterr().err
    assert said.count("cannot copy TensorBoard files to the checkpoint storage") == 1


def test_a_directory_that_does_not_exist_needs_no_storage(tmp_path):
    def no_storage() -> Store:
        raise AssertionError("the storage was built for nothing")

    syncer = Syncer(tmp_path / "absent", no_storage, "tb", skip_rank_dirs=True)
    assert syncer.sync_once() == 0
    syncer.close()


def test_checkpoint_storage_layout_is_unchanged_by_tensorboard_files(tmp_path):
    """TensorBoard files live beside the checkpoints, never listed as one."""
    from shipyard.storage import storage_at

    storage = storage_at(tmp_path)
    path = storage.store_path("c1")
    (path / "w").write_text("1")
    storage.finalize("c1", {})
    (tmp_path / "tensorboard" / "experiment-1" / "trial-1").mkdir(parents=True)
    (tmp_path / "tensorboard" / "experiment-1" / "trial-1" / "metadata.json").write_text("{}")
    assert storage.list_complete() == ["c1"]
    assert json.loads((tmp_path / "c1" / "metadata.json").read_text())["uuid"] == "c1"
