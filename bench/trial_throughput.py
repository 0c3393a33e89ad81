"""Trial throughput: trials per second through the whole platform, next to Ray Tune.

Shipyard: one random search of TRIALS quadratic trials (STEPS steps each, 2 at a time) on a
2-slot master; trials/s = TRIALS / (last trial's end - create_experiment called).
Ray Tune (when `import ray` works): RAY_SAMPLES samples of the same function, 2 at a time;
trials/s = RAY_SAMPLES / Tuner.fit() wall time (ray.init excluded, like the master's start).
Prints one JSON object.
"""

from __future__ import annotations

import json
import tempfile
import time
from pathlib import Path
from typing import Any

from _master import Master
from _quadratic import EXAMPLE, search_config
from _ray import add_ray_figures, as_epoch_s, tune_figures

from shipyard.client import Shipyard

TRIALS = 200
RAY_SAMPLES = 50  # the reference comparison used 50 samples
STEPS = 5
SLOTS = 2
TIMEOUT_S = 1800.0


def shipyard_figures() -> dict[str, Any]:
    with Master(slots=SLOTS) as master, tempfile.TemporaryDirectory() as scratch:
        sy = Shipyard(master.url, token=master.token)
        config = search_config(
            Path(scratch),
            "bench-trial-throughput",
            max_trials=TRIALS,
            max_concurrent_trials=SLOTS,
            max_length={"batches": STEPS},
        )
        created = time.time()
        experiment = sy.create_experiment(str(config), str(EXAMPLE))
        detail = sy.wait(experiment.id, TIMEOUT_S)
        waited_s = time.time() - created
    ended = [as_epoch_s(trial.ended_at) for trial in detail.trials if trial.ended_at]
    completed = sum(1 for trial in detail.trials if str(trial.state).endswith("COMPLETED"))
    elapsed_s = (max(ended) - created) if ended else waited_s
    return {
        "trials": TRIALS,
        "completed": completed,
        "experiment_state": str(detail.state),
        "elapsed_s": round(elapsed_s, 3),
        "trials_per_s": round(TRIALS / elapsed_s, 3),
    }


def quadratic_trainable(config: dict[str, float]) -> None:
    """The quadratic example's loop, reporting like it does, for Ray Tune."""
    from ray import tune

    x = 0.0
    for step in range(1, STEPS + 1):
        x -= config["lr"] * 2 * (x - config["target"])
        tune.report({"loss": (x - config["target"]) ** 2, "steps_completed": step})


def ray_figures() -> dict[str, Any]:
    import ray
    from ray import tune

    ray.init(num_cpus=SLOTS, include_dashboard=False, log_to_driver=False, logging_level="ERROR")
    try:
        with tempfile.TemporaryDirectory() as storage:
            tuner = tune.Tuner(
                quadratic_trainable,
                param_space={"lr": tune.loguniform(1e-3, 10**-0.5), "target": 3.0},
                tune_config=tune.TuneConfig(
                    num_samples=RAY_SAMPLES, max_concurrent_trials=SLOTS, metric="loss", mode="min"
                ),
                run_config=tune.RunConfig(storage_path=storage, verbose=0),
            )
            started = time.perf_counter()
            results = tuner.fit()
            elapsed_s = time.perf_counter() - started
    finally:
        ray.shutdown()
    return tune_figures(results, RAY_SAMPLES, elapsed_s)


def main() -> None:
    result: dict[str, Any] = {"benchmark": "trial_throughput", "unit": "trials/s"}
    result["shipyard"] = shipyard_figures()
    add_ray_figures(result, ray_figures)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
