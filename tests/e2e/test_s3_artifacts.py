"""Artifacts and TensorBoard files when the experiment's checkpoint_storage is S3 (a real
SeaweedFS server, tests/fixtures/s3.py), on a real master with real trials: the trial writes
each artifact into the bucket (none on the master's disk) and the master lists them and
serves each byte for byte (sha256 checked); the trials' TensorBoard files (Shipyard's own
scalars, and a trial's own file in ctx.train.get_tensorboard_path(), across a restart from
an S3 checkpoint) are in the bucket, and once downloaded TensorBoard's reader finds the
values the master stores; deleting the experiments removes all their objects."""

from __future__ import annotations

import hashlib
import sys
import types
import warnings
from pathlib import Path

import pytest
import yaml

from tests.e2e.master import CODE, Master
from tests.e2e.test_artifacts import EXPECTED, GOOD, content, listed
from tests.fixtures.s3 import S3Server

# TensorBoard's own reader without TensorFlow, whose import alone takes 20 s (as in
# tests/core/test_tfevents.py): the module TensorBoard looks for to use its stub.
sys.modules.setdefault("tensorboard.compat.notf", types.ModuleType("tensorboard.compat.notf"))
with warnings.catch_warnings():  # google.api_core's FutureWarning about Python 3.11
    warnings.simplefilter("ignore", FutureWarning)
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

PREFIX = "team-b/storage"
# tensorboard_steps.py: Shipyard's scalars, and its own "mine/x_squared" at steps 5 and 10;
# it checkpoints at step 5, crashes after step 7 and resumes from its checkpoint.
TENSORBOARD = """
name: s3-tensorboard
entrypoint: python3 tensorboard_steps.py
hyperparameters: {steps: 10, ckpt_every: 5, crash_at: 7, x: 2.0}
searcher: {name: single, metric: val_loss}
max_restarts: 1
"""


@pytest.fixture(scope="module")
def bucket(s3_server: S3Server) -> str:
    return s3_server.new_bucket()


@pytest.fixture(scope="module")
def master(tmp_path_factory):
    m = Master(tmp_path_factory.mktemp("s3-artifacts") / "home", slots=2).start()
    yield m
    m.stop()


@pytest.fixture(scope="module")
def runs(master: Master, s3_server: S3Server, bucket: str) -> dict:
    """Both experiments, run at once to their end: {"artifacts": trial, "tensorboard": trial}."""
    storage = yaml.safe_dump({"checkpoint_storage": s3_server.storage(bucket, PREFIX)})
    started = {"artifacts": master.create(GOOD + storage, CODE)}
    started["tensorboard"] = master.create(TENSORBOARD + storage, CODE)
    found = {}
    for key, exp in started.items():
        done = master.wait(exp["id"], timeout=120)
        trial = master.trial(done["trials"][0]["id"])
        assert done["state"] == "COMPLETED", (trial, master.logs(trial["id"]))
        found[key] = trial
    return found


def stored(s3_server: S3Server, bucket: str, prefix: str) -> dict[str, int]:
    """{key under ``prefix/``: size} of the objects the bucket lists."""
    pages = s3_server.client().get_paginator("list_objects_v2")
    return {
        item["Key"].removeprefix(f"{prefix}/"): item["Size"]
        for page in pages.paginate(Bucket=bucket, Prefix=f"{prefix}/")
        for item in page.get("Contents", ())
    }


def download(s3_server: S3Server, bucket: str, prefix: str, into: Path) -> list[str]:
    """Every object under ``prefix/`` into ``into``, as `aws s3 sync` would (docs/core-api.md)."""
    keys = sorted(stored(s3_server, bucket, prefix))
    for key in keys:
        (into / key).parent.mkdir(parents=True, exist_ok=True)
        s3_server.client().download_file(bucket, f"{prefix}/{key}", str(into / key))
    return keys


def scalars(directory: Path) -> dict[str, dict[int, float]]:
    """{tag: {step: value}} as TensorBoard's reader loads the run's files (in name order: for
    a step trained twice, the later run's value)."""
    accumulator = EventAccumulator(str(directory), size_guidance={"scalars": 0})  # keep all
    accumulator.Reload()
    return {
        tag: {event.step: event.value for event in accumulator.Scalars(tag)}
        for tag in accumulator.Tags()["scalars"]
    }


def test_artifacts_are_written_to_the_bucket_and_served_byte_for_byte(
    master, runs, s3_server, bucket
):
    trial = runs["artifacts"]
    found = listed(master, trial["id"])
    assert set(found) == set(EXPECTED)
    in_bucket = stored(s3_server, bucket, PREFIX)
    for key, (kind, media_type, expected) in EXPECTED.items():
        artifact = found[key]
        assert (artifact["kind"], artifact["media_type"]) == (kind, media_type), key
        step = "none" if key[1] is None else key[1]
        assert artifact["storage_path"] == f"artifacts/trial-{trial['id']}/{step}/{key[0]}"
        assert in_bucket[artifact["storage_path"]] == artifact["size"], key
        served = content(master, artifact).content
        assert hashlib.sha256(served).hexdigest() == artifact["sha256"], key
        if expected is not None:
            assert served == expected, key
        # what the bucket holds is what the master serves
        path = f"{PREFIX}/{artifact['storage_path']}"
        assert s3_server.client().get_object(Bucket=bucket, Key=path)["Body"].read() == served
    artifact_keys = {k for k in in_bucket if k.startswith("artifacts/")}
    assert artifact_keys == {a["storage_path"] for a in found.values()}
    # nothing of them on the master's disk (the trial's working directory is there)
    assert not list(master.home.rglob("artifacts"))
    names = {"samples.png", "predictions", "notes"}  # the trial never wrote these as files
    assert not [p for p in master.home.rglob("*") if p.name in names]


def test_tensorboard_files_are_in_the_bucket_and_read_back_as_the_masters_metrics(
    master, runs, s3_server, bucket, tmp_path
):
    for key, trial in runs.items():
        prefix = f"{PREFIX}/tensorboard/experiment-{trial['experiment_id']}"
        files = download(s3_server, bucket, prefix, tmp_path / key)
        run = f"trial-{trial['id']}"
        assert {f.split("/")[0] for f in files} == {run}, files
        ours = [f for f in files if f.endswith(".shipyard")]
        assert len(ours) == len(trial["runs"]), files  # one event file a run
        found = scalars(tmp_path / key / run)
        groups = {"training": ["loss"], "validation": ["val_loss"]}
        if key == "tensorboard":
            groups["training"].append("run")
        for group, metrics in groups.items():
            for name in metrics:
                expected = master.metrics(trial["id"], group, name)
                assert found.pop(f"{group}/{name}") == pytest.approx(dict(expected), rel=1e-6)
        if key == "tensorboard":
            assert len(trial["runs"]) == 2  # crashed at step 7, resumed from step 5
            assert dict(master.metrics(trial["id"], "training", "run")) == {
                s: 1.0 if s <= 5 else 2.0 for s in range(1, 11)
            }
            assert len(files) == 4  # each run's own file beside Shipyard's
            assert found == {"mine/x_squared": {5: 4.0, 10: 4.0}}
        else:
            assert found == {} and len(files) == 1


def test_deleting_the_experiments_removes_their_objects_from_the_bucket(
    master, runs, s3_server, bucket
):
    before = stored(s3_server, bucket, PREFIX)
    for trial in runs.values():
        tensorboard = f"tensorboard/experiment-{trial['experiment_id']}/"
        assert any(k.startswith(tensorboard) for k in before)
        r = master.http.delete(f"/experiments/{trial['experiment_id']}")
        assert r.status_code == 200, r.text
        assert master.http.get(f"/trials/{trial['id']}/artifacts").status_code == 404
    assert any(k.startswith(f"artifacts/trial-{runs['artifacts']['id']}/") for k in before)
    assert stored(s3_server, bucket, PREFIX) == {}  # artifacts, TensorBoard files, checkpoints
