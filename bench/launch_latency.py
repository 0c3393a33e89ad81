"""Launch latency: from create_experiment returning to the trial's first training metric stored.

Runs examples/quadratic/const.yaml RUNS times, one after the other, on a fresh master and
prints one JSON object. Target: median under 1 s.
"""

from __future__ import annotations

import json
import time

import httpx
from _master import REPO, Master, has_training_point
from _poll import poll
from _stats import summary

from shipyard.client import Shipyard

RUNS = 10
TIMEOUT_S = 60.0
TARGET_MEDIAN_S = 1.0
EXAMPLE = REPO / "examples" / "quadratic"


def first_training_metric_latency(sy: Shipyard, api: httpx.Client) -> float:
    experiment = sy.create_experiment(str(EXAMPLE / "const.yaml"), str(EXAMPLE))
    created = time.perf_counter()

    def trial_id() -> int | None:
        trials = api.get(f"/experiments/{experiment.id}/trials").raise_for_status().json()
        return trials[0]["id"] if trials else None

    trial = poll(trial_id, "trial")
    poll(lambda: has_training_point(api, trial), "training metric")
    latency = time.perf_counter() - created
    # Runs don't overlap: the next one starts on an idle master.
    sy.wait(experiment.id, TIMEOUT_S)
    return latency


def main() -> None:
    with Master(slots=1) as master:
        sy = Shipyard(master.url, token=master.token)
        with master.api(timeout_s=10) as api:
            samples = [first_training_metric_latency(sy, api) for _ in range(RUNS)]
    figures = summary(samples)
    result = {
        "benchmark": "launch_latency",
        "unit": "s",
        "what": "create_experiment returned -> first training metric stored",
        "runs": RUNS,
        **figures,
        "target_median": TARGET_MEDIAN_S,
        "meets_target": figures["median"] < TARGET_MEDIAN_S,
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
