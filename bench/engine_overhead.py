"""Engine overhead: one quadratic random search on the local, Ray and Slurm backends, side by
side with Ray Tune on the same Ray cluster.

One master with three pools of 2 slots each (local; ray and slurm with slot_type cpu), on a
throwaway one-node Ray head (4 CPUs) and Slurm cluster started as the tests start them
(tests/fixtures/). Each pool in turn, never two at once (the machine may have 2 cores), runs
examples/quadratic/random.yaml made into TRIALS trials of STEPS steps, 2 at a time:
- launch latency: create_experiment called -> the first trial's first training metric stored;
- per trial: the trial first listed -> its first training metric stored (polled);
- trials/s: completed trials / (last trial's end - create_experiment called).
Ray Tune, after the master stopped: TRIALS samples of the same loop, 2 at a time with 1 CPU
each; launch latency: Tuner.fit() called -> the first result; per trial: the trial first seen
by Tune -> its first result; trials/s: TRIALS / fit() wall time (ray.init excluded).
Prints one JSON object with the figures and their ratios; no targets.
"""

from __future__ import annotations

import contextlib
import json
import signal
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import yaml
from _master import REPO, Master, has_training_point
from _poll import poll
from _quadratic import EXAMPLE, search_config
from _ray import as_epoch_s, stdout_to_stderr, tune_figures
from _stats import summary

from shipyard.client import Shipyard

TRIALS = 12
STEPS = 5
SLOTS = 2  # per pool, and Ray Tune's concurrent trials
POOLS = ("local", "ray", "slurm")
POLL_S = 0.02
TIMEOUT_S = 600.0
# The Ray head and Slurm cluster are the tests' (tests/fixtures/), imported when started.
sys.path.insert(0, str(REPO))


@contextlib.contextmanager
def ray_head() -> Iterator[str]:
    """A throwaway Ray head (tests/fixtures/ray_cluster.py); yields its address."""
    from tests.fixtures.ray_cluster import start_ray_cluster

    cluster = start_ray_cluster()
    try:
        yield cluster.address
    finally:
        left = cluster.stop()
        if left:
            print(f"Ray processes left after the bench: {left}", file=sys.stderr)


@contextlib.contextmanager
def slurm_cluster() -> Iterator[Path]:
    """A throwaway one-node Slurm cluster (tests/fixtures/slurm.py); yields its slurm.conf."""
    from tests.fixtures.slurm import start_slurm_cluster, stop_slurm_cluster, why_no_slurm_cluster

    reason = why_no_slurm_cluster()
    if reason:
        raise RuntimeError(reason)
    cluster = start_slurm_cluster()
    try:
        yield cluster.conf
    finally:
        stop_slurm_cluster(cluster)


def master_config(ray_address: str, slurm_conf: Path) -> str:
    pools = [
        {"pool_name": "local"},
        {"pool_name": "ray", "type": "ray", "address": ray_address, "slot_type": "cpu"},
        {"pool_name": "slurm", "type": "slurm", "slurm_conf": str(slurm_conf), "slot_type": "cpu"},
    ]
    for pool in pools:
        pool["slots"] = SLOTS  # Ray's head has 4 CPUs, Slurm's node 8: use 2 of each
    return yaml.safe_dump({"resource_pools": pools, "default_compute_pool": "local"})


def wait_until_healthy(api: httpx.Client) -> None:
    """A Ray pool answers once its driver has connected: launches before that would queue,
    and the wait would count as launch latency."""

    def healthy() -> bool:
        pools = api.get("/resource-pools").raise_for_status().json()
        return all(pool["healthy"] for pool in pools)

    poll(healthy, "healthy pools", timeout_s=60, every_s=0.2)


def first_metric_times(api: httpx.Client, experiment_id: int) -> dict[int, tuple[float, float]]:
    """Trial id -> (perf_counter when first listed, when its first training metric was seen),
    for every trial that reported one; returns when no trial is left to watch."""
    listed: dict[int, float] = {}
    measured: dict[int, tuple[float, float]] = {}
    ended_without: set[int] = set()
    deadline = time.monotonic() + TIMEOUT_S
    while len(measured) + len(ended_without) < TRIALS:
        if time.monotonic() > deadline:
            raise TimeoutError(f"experiment {experiment_id}: {len(measured)} trials measured")
        now = time.perf_counter()
        for trial in api.get(f"/experiments/{experiment_id}/trials").raise_for_status().json():
            trial_id = trial["id"]
            listed.setdefault(trial_id, now)
            if trial_id in measured or trial_id in ended_without:
                continue
            if has_training_point(api, trial_id):
                measured[trial_id] = (listed[trial_id], time.perf_counter())
            elif trial["state"] in ("COMPLETED", "STOPPED", "ERRORED", "CANCELED"):
                ended_without.add(trial_id)  # it ended before any metric: not a sample
        time.sleep(POLL_S)
    return measured


def pool_figures(sy: Shipyard, api: httpx.Client, pool: str, scratch: Path) -> dict[str, Any]:
    config = search_config(
        scratch,
        f"bench-engine-overhead-{pool}",
        pool=pool,
        max_trials=TRIALS,
        max_concurrent_trials=SLOTS,
        max_length={"batches": STEPS},
    )
    created_wall, created = time.time(), time.perf_counter()
    experiment = sy.create_experiment(str(config), str(EXAMPLE))
    firsts = first_metric_times(api, experiment.id)
    detail = sy.wait(experiment.id, TIMEOUT_S)
    completed = [t for t in detail.trials if str(t.state.value) == "COMPLETED"]
    elapsed_s = max(as_epoch_s(t.ended_at) for t in detail.trials if t.ended_at) - created_wall
    first_trial = min(firsts)
    return {
        "trials": len(detail.trials),
        "completed": len(completed),
        "experiment_state": str(detail.state.value),
        "launch_latency_s": round(firsts[first_trial][1] - created, 4),
        "trial_launch_latency_s": summary([seen - listed for listed, seen in firsts.values()]),
        "elapsed_s": round(elapsed_s, 3),
        "trials_per_s": round(len(completed) / elapsed_s, 3),
    }


def shipyard_figures(ray_address: str, slurm_conf: Path, home: Path) -> dict[str, Any]:
    figures = {}
    with (
        Master(config=master_config(ray_address, slurm_conf), home=home) as master,
        Shipyard(master.url, token=master.token) as sy,
        master.api(timeout_s=10) as api,
        tempfile.TemporaryDirectory() as scratch,
    ):
        wait_until_healthy(api)
        for pool in POOLS:  # one after the other: they would share the machine's cores
            figures[pool] = pool_figures(sy, api, pool, Path(scratch))
    return figures


def quadratic_trainable(config: dict[str, float]) -> None:
    """The quadratic example's loop, reporting every step as train.py does, for Ray Tune."""
    from ray import tune

    x = 0.0
    for step in range(1, STEPS + 1):
        x -= config["lr"] * 2 * (x - config["target"])
        tune.report({"loss": (x - config["target"]) ** 2, "steps_completed": step})


def first_result_recorder() -> Any:
    """A Tune callback noting, per trial, when Tune first saw it and its first result."""
    from ray.tune import Callback

    class FirstResults(Callback):
        def __init__(self) -> None:
            self.seen: dict[str, float] = {}
            self.first_result: dict[str, float] = {}

        def on_step_begin(self, iteration: int, trials: list, **info: Any) -> None:
            now = time.perf_counter()
            for trial in trials:
                self.seen.setdefault(trial.trial_id, now)

        def on_trial_result(self, iteration: int, trials: list, trial: Any, **info: Any) -> None:
            self.first_result.setdefault(trial.trial_id, time.perf_counter())
            self.seen.setdefault(trial.trial_id, self.first_result[trial.trial_id])

    return FirstResults()


def ray_tune_figures(ray_address: str) -> dict[str, Any]:
    import ray
    from ray import tune

    ray.init(address=ray_address, log_to_driver=False, logging_level="ERROR")
    try:
        with tempfile.TemporaryDirectory() as storage:
            recorder = first_result_recorder()
            tuner = tune.Tuner(
                tune.with_resources(quadratic_trainable, {"cpu": 1}),
                param_space={"lr": tune.loguniform(1e-3, 10**-0.5), "target": 3.0},
                tune_config=tune.TuneConfig(
                    num_samples=TRIALS, max_concurrent_trials=SLOTS, metric="loss", mode="min"
                ),
                run_config=tune.RunConfig(storage_path=storage, verbose=0, callbacks=[recorder]),
            )
            started = time.perf_counter()
            results = tuner.fit()
            elapsed_s = time.perf_counter() - started
    finally:
        ray.shutdown()
    return tune_figures(
        results,
        TRIALS,
        elapsed_s,
        launch_latency_s=round(min(recorder.first_result.values()) - started, 4),
        trial_launch_latency_s=summary(
            [at - recorder.seen[trial] for trial, at in recorder.first_result.items()]
        ),
    )


def ratios(figures: dict[str, dict[str, Any]]) -> dict[str, dict[str, float]]:
    """Throughput above 1: faster than the reference; latency above 1: slower."""

    def ratio(of: str, to: str, figure: str) -> float:
        def value(name: str) -> float:
            found = figures[name][figure]
            return found["median"] if isinstance(found, dict) else found

        return round(value(of) / value(to), 3)

    return {
        f"{of}_over_{to}": {
            figure: ratio(of, to, figure)
            for figure in ("trials_per_s", "launch_latency_s", "trial_launch_latency_s")
        }
        for of, to in (("ray", "ray_tune"), ("ray", "local"), ("slurm", "local"))
    }


def main() -> None:
    # A plain `kill` ends the bench through the same clean-up as Ctrl-C.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(128 + signal.SIGTERM))
    with (
        # The master's home outlives the clusters: a trial left running on Ray or Slurm by
        # an interrupted run may still write a checkpoint into it until they stop.
        tempfile.TemporaryDirectory(prefix="shipyard-bench-", ignore_cleanup_errors=True) as home,
        ray_head() as ray_address,
        slurm_cluster() as slurm_conf,
    ):
        figures = shipyard_figures(ray_address, slurm_conf, Path(home))
        with stdout_to_stderr():  # Ray's banners stay off the JSON line
            figures["ray_tune"] = ray_tune_figures(ray_address)
    result: dict[str, Any] = {
        "benchmark": "engine_overhead",
        "unit": "s, trials/s",
        "trials": TRIALS,
        "steps": STEPS,
        "concurrent": SLOTS,
        **figures,
        "ratios": ratios(figures),
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
