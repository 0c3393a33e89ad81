"""DDP overhead: the same 2-process DDP script launched by Shipyard (a slots_per_trial: 2 trial
with `python3 -m shipyard.launch.torch_distributed`) and by plain `torchrun`, alternating,
ROUNDS times each. Each run's rank 0 times its own steps after a warm-up (samples/s over both
ranks), so process start-up is left out on both sides. Target: Shipyard / torchrun >= 0.97.
Prints one JSON object.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml
from _master import REPO, Master
from _stats import summary

from shipyard.client import Shipyard

ROUNDS = 5
TARGET_RATIO = 0.97
TRIAL_DIR = REPO / "bench" / "ddp_trial"


def shipyard_run(sy: Shipyard, scratch: Path, result: Path) -> None:
    config = scratch / "ddp.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "name": "bench-ddp-overhead",
                "entrypoint": "python3 -m shipyard.launch.torch_distributed python3 train.py",
                "hyperparameters": {"result_path": str(result)},
                "searcher": {"name": "single", "metric": "loss"},
                "resources": {"slots_per_trial": 2},
                "max_restarts": 0,
            }
        )
    )
    exp = sy.create_experiment(str(config), str(TRIAL_DIR))
    detail = sy.wait(exp.id, 600)
    if detail.state != "COMPLETED":
        raise RuntimeError(f"the Shipyard run ended {detail.state}")


def torchrun_run(result: Path) -> None:
    subprocess.run(
        [
            sys.executable,
            "-m",
            "torch.distributed.run",
            "--standalone",
            "--nproc_per_node",
            "2",
            str(TRIAL_DIR / "train.py"),
            str(result),
        ],
        check=True,
        capture_output=True,
        cwd=TRIAL_DIR,
        timeout=300,
    )


def last(result: Path) -> float:
    return json.loads(result.read_text().splitlines()[-1])["samples_per_s"]


def main() -> None:
    shipyard_rates, torchrun_rates = [], []
    with Master(slots=2) as master, tempfile.TemporaryDirectory() as tmp:
        sy = Shipyard(master.url, token=master.token)
        scratch = Path(tmp)
        for i in range(ROUNDS):
            result = scratch / f"round-{i}.jsonl"
            shipyard_run(sy, scratch, result)
            shipyard_rates.append(last(result))
            torchrun_run(result)
            torchrun_rates.append(last(result))
    ratio = statistics.median(shipyard_rates) / statistics.median(torchrun_rates)
    print(
        json.dumps(
            {
                "benchmark": "ddp_overhead",
                "unit": "samples/s",
                "processes": 2,
                "shipyard": summary(shipyard_rates, 1),
                "torchrun": summary(torchrun_rates, 1),
                "ratio": round(ratio, 4),
                "paired_ratios": [
                    round(s / t, 4) for s, t in zip(shipyard_rates, torchrun_rates, strict=True)
                ],
                "target_ratio": TARGET_RATIO,
                "meets_target": ratio >= TARGET_RATIO,
            }
        )
    )


if __name__ == "__main__":
    main()
