"""TensorBoard over an experiment's directory in the checkpoint storage: a real
`tensorboard` server (from PyPI) serves, through its HTTP API, the scalars the master
stores for each trial (Shipyard's own metrics) and the trial's own scalars, across a
restart from a checkpoint; and deleted with the experiment."""

from __future__ import annotations

import subprocess
import sys

import httpx
import pytest

from tests.e2e.master import CODE, Master, free_port
from tests.fixtures.plain_http import NO_TLS
from tests.fixtures.poll import poll

# TensorBoard without TensorFlow (TensorFlow is in the test venv, and TensorBoard's start
# would import it, 20 s here): the module TensorBoard looks for to use its own stub.
TENSORBOARD = """
import sys, types
sys.modules["tensorboard.compat.notf"] = types.ModuleType("tensorboard.compat.notf")
from tensorboard.main import run_main
sys.argv[0] = "tensorboard"
run_main()
"""


@pytest.fixture(scope="module")
def master(tmp_path_factory):
    m = Master(tmp_path_factory.mktemp("tensorboard") / "home", slots=3).start()
    yield m
    m.stop()


@pytest.fixture(scope="module")
def experiments(master, tmp_path_factory):
    """Two trials (a grid over x, with Shipyard's scalars: SHIPYARD_TENSORBOARD unset, the
    default) that each crash at step 7 of 10 and resume from their checkpoint at step 5, and
    one trial with SHIPYARD_TENSORBOARD=0, all at once."""
    storage = tmp_path_factory.mktemp("storage")
    common = f"""
entrypoint: python3 tensorboard_steps.py
checkpoint_storage: {{type: shared_fs, host_path: {storage}}}
max_restarts: 1
"""
    searched = master.create(
        "name: tensorboard\n"
        "hyperparameters: {steps: 10, ckpt_every: 5, crash_at: 7, "
        "x: {type: categorical, vals: [0.5, 2.0]}}\n"
        "searcher: {name: grid, metric: val_loss, max_concurrent_trials: 2}\n" + common,
        CODE,
    )
    off = master.create(
        "name: tensorboard-off\n"
        "hyperparameters: {steps: 5, ckpt_every: 5, x: 1.0}\n"
        "searcher: {name: single, metric: val_loss}\n"
        "environment: {environment_variables: [SHIPYARD_TENSORBOARD=0]}\n" + common,
        CODE,
    )
    done = {
        name: master.wait(exp["id"], timeout=120) for name, exp in (("on", searched), ("off", off))
    }
    for exp in done.values():
        assert exp["state"] == "COMPLETED", [master.trial(t["id"]) for t in exp["trials"]]
    return storage, done["on"], done["off"]


@pytest.fixture(scope="module")
def tensorboard(experiments, tmp_path_factory):
    """`tensorboard --logdir <storage>/tensorboard/experiment-<id>`, once every trial's
    scalars are loaded (it loads in the background after it answers)."""
    storage, on, _off = experiments
    logdir = storage / "tensorboard" / f"experiment-{on['id']}"
    output = tmp_path_factory.mktemp("tensorboard-server") / "output.log"
    port = free_port()
    with open(output, "wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-c", TENSORBOARD, "--logdir", str(logdir)]
            + ["--host", "127.0.0.1", "--port", str(port)],
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    http = httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=10, verify=NO_TLS)

    def loaded_steps() -> dict[str, int]:
        if proc.poll() is not None:
            raise RuntimeError(f"tensorboard exited: {output.read_text()}")
        loaded = {}
        for run in http.get("/data/runs").json():
            r = http.get("/data/plugin/scalars/scalars", params={"run": run, "tag": "training/run"})
            loaded[run] = len(r.json()) if r.status_code == 200 else 0  # not the tag yet
        return loaded

    try:
        expected = {f"trial-{t['id']}": 10 for t in on["trials"]}
        poll(
            loaded_steps,
            "tensorboard to load every trial's 10 steps",
            until=lambda loaded: loaded == expected,
            timeout_s=60,
            ignore=(httpx.TransportError,),
        )
        yield http
    finally:
        http.close()
        proc.kill()
        proc.wait(timeout=10)


def _scalars(http: httpx.Client, run: str, tag: str) -> list[tuple[int, float]]:
    r = http.get("/data/plugin/scalars/scalars", params={"run": run, "tag": tag})
    assert r.status_code == 200, r.text
    return [(step, value) for _wall_time, step, value in r.json()]


def test_tensorboard_serves_what_the_master_stores_for_each_trial(master, experiments, tensorboard):
    storage, on, _off = experiments
    assert sorted(tensorboard.get("/data/runs").json()) == sorted(
        f"trial-{t['id']}" for t in on["trials"]
    )
    for summary in on["trials"]:
        trial = master.trial(summary["id"])
        assert len(trial["runs"]) == 2  # crashed at step 7, resumed from step 5
        run = f"trial-{trial['id']}"
        for group, name in (("validation", "val_loss"), ("training", "loss"), ("training", "run")):
            stored = master.metrics(trial["id"], group, name)
            served = _scalars(tensorboard, run, f"{group}/{name}")
            assert [s for s, _ in served] == [s for s, _ in stored], (group, name)
            assert [v for _, v in served] == pytest.approx([v for _, v in stored], rel=1e-6)
        # Steps 6 and 7 were trained twice: both the master and TensorBoard keep the rerun's.
        assert _scalars(tensorboard, run, "training/run") == [
            (s, 1.0 if s <= 5 else 2.0) for s in range(1, 11)
        ]
        x = trial["hparams"]["x"]
        assert _scalars(tensorboard, run, "mine/x_squared") == [(5, x * x), (10, x * x)]
        # Each run's own files are kept: Shipyard's event file and the trial's, twice.
        files = sorted(
            p.name for p in (storage / "tensorboard" / f"experiment-{on['id']}" / run).iterdir()
        )
        assert len(files) == 4 and sum(name.endswith(".shipyard") for name in files) == 2, files

    # Deleting the experiment deletes them with its checkpoints.
    assert master.http.delete(f"/experiments/{on['id']}").status_code == 200
    assert not (storage / "tensorboard" / f"experiment-{on['id']}").exists()


def test_shipyard_tensorboard_0_keeps_nothing_in_the_storage(experiments):
    storage, _on, off = experiments
    assert not (storage / "tensorboard" / f"experiment-{off['id']}").exists()
