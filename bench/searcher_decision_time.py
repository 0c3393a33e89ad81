"""Searcher decision time: how long adaptive_asha takes per decision in a 10,000-trial search.

The searcher is driven directly (no simulator, no master): a FIFO of trials, each reporting
a validation at its target with a seeded random loss (and, every third time, one more
validation half-way, which is not a decision point but still a call), then exiting when
stopped or at the full length. Only the searcher calls are timed (perf_counter_ns around
each on_validation / on_trial_exit), so the figures are the searcher's own cost as the
master would pay it per event. get_state (once, at the end) is timed apart: the master
saves the state once per pass over events, not per decision.

Prints one JSON object: median and p99 per kind of call, in microseconds. Target: < 1 ms.
"""

from __future__ import annotations

import json
import random
import statistics
import time
from collections import deque
from collections.abc import Callable
from typing import Any

from _stats import percentile

from shipyard.common.config import searcher_from_json
from shipyard.search import Action, Create, ExitReason, SetTarget, Shutdown, Stop, make_searcher

TRIALS = 10_000
LENGTH = 1024
CONCURRENT = 64
TARGET_US = 1000.0
SPACE = {
    "lr": {"type": "log", "minval": -4, "maxval": -1, "base": 10},
    "width": {"type": "int", "minval": 16, "maxval": 512},
}
CONFIG = {
    "name": "adaptive_asha",
    "metric": "loss",
    "smaller_is_better": True,
    "time_metric": "batches",
    "max_time": LENGTH,
    "max_trials": TRIALS,
    "max_concurrent_trials": CONCURRENT,
    "mode": "standard",
    "divisor": 4,
    "max_rungs": 5,
}


def run() -> dict[str, object]:
    rng = random.Random(0)
    searcher = make_searcher(searcher_from_json(CONFIG), SPACE, 0)  # validated once
    samples: dict[str, list[float]] = {"on_validation": [], "on_trial_exit": []}
    queue: deque[tuple[str, int]] = deque(
        (r.request_id, r.target or LENGTH) for r in searcher.create_trials()
    )
    exits: deque[tuple[str, ExitReason]] = deque()
    created = len(queue)
    done = False

    def timed(kind: str, call: Callable[..., list[Action]], *args: Any) -> list[Action]:
        start = time.perf_counter_ns()
        actions = call(*args)
        samples[kind].append((time.perf_counter_ns() - start) / 1000)
        return actions

    while not done:
        if exits:
            actions = timed("on_trial_exit", searcher.on_trial_exit, *exits.popleft())
        else:
            request_id, target = queue.popleft()
            if rng.random() < 1 / 3:
                half = {"loss": rng.random() + 1, "batches": target // 2}
                timed("on_validation", searcher.on_validation, request_id, half, 0)
            metrics = {"loss": rng.random(), "batches": target}
            actions = timed("on_validation", searcher.on_validation, request_id, metrics, 0)
            answered = False
            for action in actions:
                if isinstance(action, SetTarget) and action.request_id == request_id:
                    queue.append((request_id, action.target))
                    answered = True
                elif isinstance(action, Stop):
                    exits.append((action.request_id, ExitReason.STOPPED))
                    answered = True
            if not answered:  # the full length: it completes
                exits.append((request_id, ExitReason.COMPLETED))
            continue
        for action in actions:
            if isinstance(action, Create):
                queue.append((action.request.request_id, action.request.target or LENGTH))
                created += 1
            elif isinstance(action, Shutdown):
                done = True
    start = time.perf_counter()
    state = searcher.get_state()
    state_ms = (time.perf_counter() - start) * 1000
    every = samples["on_validation"] + samples["on_trial_exit"]
    figures = {
        kind: {
            "calls": len(values),
            "median_us": round(statistics.median(values), 2),
            "p99_us": round(percentile(values, 0.99), 2),
            "max_us": round(max(values), 2),
        }
        for kind, values in {**samples, "all": every}.items()
    }
    return {
        "benchmark": "searcher_decision_time",
        "searcher": "adaptive_asha",
        "trials_created": created,
        "decisions": figures,
        "p99_us": figures["all"]["p99_us"],
        "target_us": TARGET_US,
        "meets_target": figures["all"]["p99_us"] < TARGET_US,
        "get_state_ms": round(state_ms, 2),
        "state_json_bytes": len(json.dumps(state)),
        "settings": {"config": CONFIG, "half_way_validations": "one trial in three"},
    }


if __name__ == "__main__":
    print(json.dumps(run(), indent=2))
