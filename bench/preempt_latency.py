"""Preemption latency: the time from submitting a higher-priority experiment to the
preempted trial's slot running the new trial. Target: under 2 s plus the checkpoint write.

One slot in a pool with preemption. Each round, a priority-60 trial trains (checking
should_preempt() every 10 ms step); once it reports, a priority-10 experiment is submitted.
The low trial is told through its long-poll, writes a 4 MB checkpoint, exits; the master
launches the new trial on the freed slot. Measured per round: submit -> the new trial's
run starts on the slot (the master's launch time) and submit -> its first metric arrives,
and the checkpoint write time the preempted trial printed. Prints one JSON object.
"""

from __future__ import annotations

import json
import tempfile
import time
from datetime import datetime
from pathlib import Path

import yaml
from _master import REPO, Master
from _poll import poll
from _stats import summary

from shipyard.client import Shipyard

ROUNDS = 5
TARGET_S = 2.0
TRIAL_CODE = REPO / "bench" / "preempt_trial"
MARK = "CHECKPOINT_WRITE_S "
POOLS = "resource_pools:\n  - pool_name: default\n    scheduler: {preemption: true}\n"


def config(directory: Path, name: str, priority: int, steps: int) -> Path:
    path = directory / f"{name}.yaml"
    path.write_text(
        yaml.safe_dump(
            {
                "name": name,
                "entrypoint": "python3 train.py",
                "hyperparameters": {"steps": steps},
                "searcher": {"name": "single", "metric": "loss"},
                "resources": {"priority": priority},
                "max_restarts": 0,
            }
        )
    )
    return path


def one_round(sy: Shipyard, scratch: Path, index: int) -> dict[str, float]:
    low = sy.create_experiment(str(config(scratch, f"low-{index}", 60, 0)), str(TRIAL_CODE))
    low_trial = poll(lambda: sy.get_experiment(low.id).trials, "low trial").pop()
    poll(lambda: sy.trial(low_trial.id).steps_completed >= 3, "low trial training")
    submitted = time.time()
    high = sy.create_experiment(str(config(scratch, f"high-{index}", 10, 20)), str(TRIAL_CODE))
    high_trial = poll(lambda: sy.get_experiment(high.id).trials, "high trial").pop()
    runs = poll(lambda: sy.trial(high_trial.id).runs, "high trial launch", every_s=0.005)
    poll(lambda: sy.trial(high_trial.id).steps_completed >= 1, "first metric", every_s=0.005)
    first_metric = time.time()
    sy.kill(low.id)
    sy.wait(high.id, 60)
    sy.wait(low.id, 60)
    written = [
        float(line.text[len(MARK) :])
        for line in sy.trial_logs(low_trial.id)
        if line.text.startswith(MARK)
    ]
    started = runs[0].started_at
    assert isinstance(started, datetime)
    return {
        "slot_reused_s": started.timestamp() - submitted,
        "first_metric_s": first_metric - submitted,
        "checkpoint_write_s": written[0],
    }


def main() -> None:
    with Master(slots=1, config=POOLS) as master, tempfile.TemporaryDirectory() as scratch:
        sy = Shipyard(master.url, token=master.token)
        rounds = [one_round(sy, Path(scratch), i) for i in range(ROUNDS)]
    reused = [r["slot_reused_s"] for r in rounds]
    beyond_checkpoint = [r["slot_reused_s"] - r["checkpoint_write_s"] for r in rounds]
    result = {
        "benchmark": "preempt_latency",
        "unit": "s",
        "rounds": ROUNDS,
        "target_s": TARGET_S,
        "submit_to_slot_reused": summary(reused),
        "submit_to_first_metric": summary([r["first_metric_s"] for r in rounds]),
        "checkpoint_write": summary([r["checkpoint_write_s"] for r in rounds]),
        "slot_reused_minus_checkpoint_write": summary(beyond_checkpoint),
    }
    result["meets_target"] = max(beyond_checkpoint) < TARGET_S
    print(json.dumps(result))


if __name__ == "__main__":
    main()
