"""ASHA throughput: trials per second of an adaptive search, Shipyard next to Ray Tune.

Shipyard: examples/quadratic/asha.yaml made into TRIALS trials (rungs at 1, 4 and 16
batches, 2 at a time) on a 2-slot master; trials/s = TRIALS / (last trial's end -
create_experiment called). Each trial trains to its rung, validates, and goes on or stops
as the searcher says (ctx.searcher.operations()).
Ray Tune: the same function and space under ASHAScheduler (time_attr batches, max_t 16,
grace_period 1, reduction_factor 4), RAY_SAMPLES samples 2 at a time (BENCH_RAY_SAMPLES,
default TRIALS); trials/s = RAY_SAMPLES / Tuner.fit() wall time (ray.init excluded).
Prints one JSON object.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from _master import Master
from _quadratic import EXAMPLE, search_config
from _ray import add_ray_figures, as_epoch_s, tune_figures

from shipyard.client import Shipyard

TRIALS = 300
RAY_SAMPLES = int(os.environ.get("BENCH_RAY_SAMPLES", TRIALS))
MAX_TIME = 16
DIVISOR = 4
SLOTS = 2
TIMEOUT_S = 1800.0


def shipyard_figures() -> dict[str, Any]:
    with Master(slots=SLOTS) as master, tempfile.TemporaryDirectory() as scratch:
        sy = Shipyard(master.url, token=master.token)
        config = search_config(
            Path(scratch),
            "bench-hpo-throughput",
            base="asha.yaml",
            max_trials=TRIALS,
            max_concurrent_trials=SLOTS,
            max_time=MAX_TIME,
            divisor=DIVISOR,
        )
        created = time.time()
        experiment = sy.create_experiment(str(config), str(EXAMPLE))
        detail = sy.wait(experiment.id, TIMEOUT_S)
    ended = [as_epoch_s(trial.ended_at) for trial in detail.trials if trial.ended_at]
    elapsed_s = max(ended) - created
    return {
        "trials": len(detail.trials),
        "states": dict(Counter(str(trial.state.value) for trial in detail.trials)),
        "experiment_state": str(detail.state.value),
        "elapsed_s": round(elapsed_s, 3),
        "trials_per_s": round(len(detail.trials) / elapsed_s, 3),
    }


def quadratic_trainable(config: dict[str, float]) -> None:
    """The quadratic example's loop, validating every batch, for Ray Tune."""
    from ray import tune

    x = 0.0
    for step in range(1, MAX_TIME + 1):
        x -= config["lr"] * 2 * (x - config["target"])
        tune.report({"validation_loss": (x - config["target"]) ** 2, "batches": step})


def ray_figures() -> dict[str, Any]:
    import ray
    from ray import tune
    from ray.tune.schedulers import ASHAScheduler

    ray.init(num_cpus=SLOTS, include_dashboard=False, log_to_driver=False, logging_level="ERROR")
    try:
        with tempfile.TemporaryDirectory() as storage:
            scheduler = ASHAScheduler(
                time_attr="batches", max_t=MAX_TIME, grace_period=1, reduction_factor=DIVISOR
            )
            tuner = tune.Tuner(
                quadratic_trainable,
                param_space={"lr": tune.loguniform(1e-3, 10**-0.5), "target": 3.0},
                tune_config=tune.TuneConfig(
                    num_samples=RAY_SAMPLES,
                    max_concurrent_trials=SLOTS,
                    metric="validation_loss",
                    mode="min",
                    scheduler=scheduler,
                ),
                run_config=tune.RunConfig(storage_path=storage, verbose=0),
            )
            started = time.perf_counter()
            results = tuner.fit()
            elapsed_s = time.perf_counter() - started
    finally:
        ray.shutdown()
    finished_early = sum(
        1 for r in results if r.metrics and r.metrics.get("training_iteration", 0) < MAX_TIME
    )
    return tune_figures(results, RAY_SAMPLES, elapsed_s, stopped_early=finished_early)


def main() -> None:
    result: dict[str, Any] = {"benchmark": "hpo_throughput", "unit": "trials/s"}
    result["shipyard"] = shipyard_figures()
    add_ray_figures(result, ray_figures)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
