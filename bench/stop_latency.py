"""Stop latency: how long after a trial reports the validation that loses its rung does
ctx.searcher.should_stop() turn true in the trial. Target: every one under 1 s.

async_halving with rungs at 10 and 20 batches, one trial at a time on a 2-slot master; the
trial's metric is its trial id, so trials 2..TRIALS are each stopped at their first rung.
Each of them prints the seconds from reporting its rung-10 validation to seeing the stop
(bench/stop_trial/train.py): the metric sender's batching, the master's decision, and the
long-poll answer. Prints one JSON object.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import yaml
from _master import REPO, Master
from _stats import summary

from shipyard.client import Shipyard

TRIALS = 11
TARGET_S = 1.0
TRIAL_CODE = REPO / "bench" / "stop_trial"
MARK = "STOP_SEEN_AFTER_S "


def config(directory: Path) -> Path:
    path = directory / "stop.yaml"
    path.write_text(
        yaml.safe_dump(
            {
                "name": "bench-stop-latency",
                "entrypoint": "python3 train.py",
                "searcher": {
                    "name": "async_halving",
                    "metric": "loss",
                    "time_metric": "batches",
                    "max_time": 20,
                    "num_rungs": 2,
                    "divisor": 2,
                    "max_trials": TRIALS,
                    "max_concurrent_trials": 1,
                },
                "max_restarts": 0,
            }
        )
    )
    return path


def main() -> None:
    with Master(slots=2) as master, tempfile.TemporaryDirectory() as scratch:
        sy = Shipyard(master.url, token=master.token)
        experiment = sy.create_experiment(str(config(Path(scratch))), str(TRIAL_CODE))
        detail = sy.wait(experiment.id, 600)
        samples = [
            float(line.text[len(MARK) :])
            for trial in detail.trials
            for line in sy.trial_logs(trial.id)
            if line.text.startswith(MARK)
        ]
    result = {
        "benchmark": "stop_latency",
        "unit": "s",
        "stopped_trials": len(samples),
        "target_s": TARGET_S,
        **summary(samples),
    }
    result["meets_target"] = result["max"] < TARGET_S  # every stop within the target
    print(json.dumps(result))


if __name__ == "__main__":
    main()
