"""Step overhead: what reporting a training metric every step costs a PyTorch loop.

Runs bench/overhead_trial/train.py as a real trial of a single-trial experiment on a live
master. Inside it, the same digits MLP loop runs with and without
ctx.train.report_training_metrics every step, alternating, REPETITIONS times; the trial
writes its timings to a file this script reads. The overhead is median(reporting loop) /
median(plain loop) - 1; the paired per-repetition figures are printed too. Prints one JSON
object. Target: < 2 %.
"""

from __future__ import annotations

import json
import statistics
import tempfile
from pathlib import Path

import yaml
from _master import Master
from _stats import summary

from shipyard.client import Shipyard

STEPS = 400
REPETITIONS = 30
TIMEOUT_S = 600.0
TARGET_MEDIAN_PCT = 2.0
TRIAL_DIR = Path(__file__).resolve().parent / "overhead_trial"


def experiment_config(result_path: Path) -> dict:
    return {
        "name": "bench-step-overhead",
        "entrypoint": "python3 train.py",
        "hyperparameters": {
            "steps": STEPS,
            "repetitions": REPETITIONS,
            "result_path": str(result_path),
        },
        "searcher": {
            "name": "single",
            "metric": "overhead_pct",
            "smaller_is_better": True,
            "max_length": {"batches": STEPS * REPETITIONS},
        },
        "resources": {"slots_per_trial": 1},
        "max_restarts": 0,
    }


def main() -> None:
    with tempfile.TemporaryDirectory() as scratch, Master(slots=1) as master:
        result_path = Path(scratch) / "timings.json"
        config_path = Path(scratch) / "step_overhead.yaml"
        config_path.write_text(yaml.safe_dump(experiment_config(result_path)))

        sy = Shipyard(master.url, token=master.token)
        experiment = sy.create_experiment(str(config_path), str(TRIAL_DIR))
        detail = sy.wait(experiment.id, TIMEOUT_S)
        if not result_path.exists():
            raise SystemExit(
                f"the trial wrote no timings (experiment {detail.state}); master log:\n"
                + master.log()
            )
        trial_id = detail.trials[0].id
        with master.api() as api:
            series = (
                api.get(f"/trials/{trial_id}/metrics", params={"group": "training", "name": "loss"})
                .raise_for_status()
                .json()
            )
        timings = json.loads(result_path.read_text())

    overhead = summary(timings["overhead_pct"], digits=2)
    print(
        json.dumps(
            {
                "benchmark": "step_overhead",
                "unit": "%",
                "what": "report_training_metrics every step vs the same loop without it",
                "steps_per_loop": STEPS,
                "repetitions": REPETITIONS,
                "trial_talked_to_master": timings["master"] is not None,
                "training_points_stored": sum(len(s["points"]) for s in series),
                "plain_loop_s_median": round(statistics.median(timings["plain_s"]), 4),
                "reporting_loop_s_median": round(statistics.median(timings["reporting_s"]), 4),
                "overhead_pct": round(timings["overhead_of_medians_pct"], 2),
                "paired_overhead_pct": overhead,
                "target": TARGET_MEDIAN_PCT,
                "meets_target": timings["overhead_of_medians_pct"] < TARGET_MEDIAN_PCT,
            }
        )
    )


if __name__ == "__main__":
    main()
