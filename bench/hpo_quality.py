"""HPO quality: how much compute each searcher needs to match a random search, on synthetic
learning curves (no download, no training: every search runs in search/simulator.py).

The family of learning curves. Hyperparameters: lr (log, 1e-4..1e-1), width (int, 16..512),
dropout (double, 0..0.5). With x = (log10 lr + 2.5) / 1.5, y = (log2 width - 7) / 2,
z = (dropout - 0.2) / 0.3 (each about -1..1), the final loss is a smooth bowl plus a
deterministic bumpiness (sines whose phases come from a fixed hash):
    f(h) = 0.2 + 0.35 x^2 + 0.15 y^2 + 0.10 z^2 + 0.08 x y
           + 0.04 sin(3.1 x + p1) cos(2.3 y + p2) + 0.02 sin(5 z + p3)
The curve starts at c0(h) = 2.3 + 0.4 dropout and decays as a power law:
    loss(t) = f(h) + (c0(h) - f(h)) * (1 + t / tau(h)) ** -alpha(h)
              + noise(trial, t),   t = 1..R, R = 256 (batches)
with tau(h) = 8 * sqrt(1e-2 / lr) (a small lr starts slowly), alpha(h) = 1.3 - dropout (more
dropout learns slower but can end lower), and noise ~ N(0, 0.01), seeded by (the hparams, t).
Early and late ranks are therefore correlated but not perfectly: fast-starting high-lr
configs lead early and are overtaken by slower, better ones (crossing curves).

The methods, each through simulate() with 4 workers, over SEEDS seeds (the seed is both the
searcher's and the simulator's):
- random: N trials, each trained to R, validating at R only;
- adaptive_asha (standard mode, Determined's default; divisor 4, max_rungs 5,
  max_concurrent_trials 4) with the same budget: max_trials is the largest whose preview
  compute (the plan's expected compute) is at most random's N * R; it samples its first
  trials at the same points as random (same seed, same indices) and then more. The
  aggressive mode (one 5-rung bracket), same max_trials, is reported beside it;
- hyperband (divisor 3, max_rungs 5, max_concurrent_trials 4): one Hyperband iteration, its
  trial count fixed by R and the divisor (143 trials);
- optuna TPE with `pruner: {name: asha}` (divisor 4, 4 rungs), max_trials OPTUNA_TRIALS
  (TPE's ask grows with the study, so it gets fewer trials than adaptive_asha to keep the
  benchmark short); "unavailable: <reason>" when the optuna searcher or library is missing.

The figure. For seed s, target_s = the best validation loss random search reached (its best
final value). For each method, compute_to_reach(target_s) = the compute (time units trained
over all trials) spent when the best validation loss the method had seen first got to
target_s or below; a method that never gets there counts as infinite (and is reported in
"missed"). Per method: the median over seeds of that compute. ratio = median(method) /
median(random); the target for adaptive_asha is a ratio <= 0.25. Prints one JSON object.
"""

from __future__ import annotations

import hashlib
import json
import math
import random
import statistics
import time
from typing import Any

from shipyard.common.config import searcher_from_json
from shipyard.search import Searcher, make_searcher
from shipyard.search.preview import preview
from shipyard.search.simulator import simulate

R = 256
N = 64  # random-search trials
SEEDS = list(range(10))
WORKERS = 4
OPTUNA_TRIALS = 200
TARGET_RATIO = 0.25
C0 = 2.3  # every curve starts near the loss of a guess
SPEED_SPREAD = 0.7  # how much a config's learning speed varies apart from its quality
NOISE = 0.01

SPACE: dict[str, Any] = {
    "lr": {"type": "log", "minval": -4, "maxval": -1, "base": 10},
    "width": {"type": "int", "minval": 16, "maxval": 512},
    "dropout": {"type": "double", "minval": 0.0, "maxval": 0.5},
}
COMMON = {"metric": "loss", "smaller_is_better": True, "time_metric": "batches", "max_time": R}


def _unit_hash(*parts: object) -> float:
    digest = hashlib.blake2b("/".join(map(str, parts)).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") / 2**64


P1, P2, P3 = (2 * math.pi * _unit_hash("phase", i) for i in range(3))


def final_loss(h: dict[str, Any]) -> float:
    x = (math.log10(h["lr"]) + 2.5) / 1.5
    y = (math.log2(h["width"]) - 7) / 2
    z = (h["dropout"] - 0.2) / 0.3
    bowl = 0.35 * x * x + 0.15 * y * y + 0.10 * z * z + 0.08 * x * y
    bumps = 0.04 * math.sin(3.1 * x + P1) * math.cos(2.3 * y + P2) + 0.02 * math.sin(5 * z + P3)
    return 0.2 + bowl + bumps


def curve(h: dict[str, Any], t: int) -> float:
    f = final_loss(h)
    key = f"{h['lr']!r}/{h['width']}/{h['dropout']!r}"
    speed = math.exp(SPEED_SPREAD * random.Random(f"speed/{key}").gauss(0, 1))
    tau = (2 + 10 * (f - 0.2)) * (3e-3 / h["lr"]) ** 0.3 * speed
    alpha = 1.2 - 0.6 * h["dropout"]
    noise = random.Random(f"{key}/{t}").gauss(0, NOISE)
    return f + (C0 - f) * (1 + t / tau) ** -alpha + noise


def budget_matched_trials() -> int:
    """The largest max_trials whose adaptive_asha plan costs at most random's N * R."""
    low, high = N, N * R
    while low < high:
        mid = (low + high + 1) // 2
        plan = preview(searcher_from_json({**ASHA, "max_trials": mid}), SPACE, 0)
        low, high = (mid, high) if plan["compute"] <= N * R else (low, mid - 1)
    return low


ASHA = {
    **COMMON,
    "name": "adaptive_asha",
    "mode": "standard",
    "divisor": 4,
    "max_rungs": 5,
    "max_concurrent_trials": WORKERS,
}
HYPERBAND = {
    **COMMON,
    "name": "hyperband",
    "divisor": 3,
    "max_rungs": 5,
    "max_concurrent_trials": WORKERS,
}
OPTUNA = {
    **COMMON,
    "name": "optuna",
    "sampler": "tpe",
    "max_trials": OPTUNA_TRIALS,
    "max_concurrent_trials": WORKERS,
    "pruner": {"name": "asha", "divisor": 4, "num_rungs": 4},
}


def run(config: dict[str, Any], seed: int) -> dict[str, Any]:
    searcher: Searcher = make_searcher(searcher_from_json(config), SPACE, seed)
    start = time.perf_counter()
    sim = simulate(searcher, curve, workers=WORKERS, seed=seed)
    return {"sim": sim, "seconds": time.perf_counter() - start}


def main() -> None:
    asha_trials = budget_matched_trials()
    methods: dict[str, dict[str, Any] | str] = {
        "random": {**COMMON, "name": "random", "max_trials": N, "max_concurrent_trials": WORKERS},
        "adaptive_asha": {**ASHA, "max_trials": asha_trials},
        "adaptive_asha_aggressive": {**ASHA, "mode": "aggressive", "max_trials": asha_trials},
        "hyperband": HYPERBAND,
        "optuna_tpe_asha": OPTUNA,
    }
    try:
        make_searcher(searcher_from_json(OPTUNA), SPACE, 0)
    except Exception as error:  # missing module, missing library, not registered yet
        methods["optuna_tpe_asha"] = f"unavailable: {type(error).__name__}: {error}"

    per_method: dict[str, dict[str, Any]] = {}
    targets: list[float] = []
    for seed in SEEDS:
        random_run = run(methods["random"], seed)  # type: ignore[arg-type]
        target = random_run["sim"].best
        targets.append(target)
        for name, config in methods.items():
            if isinstance(config, str):
                continue
            result = random_run if name == "random" else run(config, seed)
            sim = result["sim"]
            entry = per_method.setdefault(
                name,
                {"to_target": [], "total_compute": [], "trials": [], "best": [], "seconds": 0.0},
            )
            entry["to_target"].append(sim.compute_to_reach(target))
            entry["best"].append(sim.best)
            entry["total_compute"].append(sim.compute)
            entry["trials"].append(len(sim.trials))
            entry["seconds"] += result["seconds"]

    random_median = statistics.median(per_method["random"]["to_target"])
    figures: dict[str, Any] = {}
    for name, config in methods.items():
        if isinstance(config, str):
            figures[name] = config
            continue
        entry = per_method[name]
        reached = [c if c is not None else math.inf for c in entry["to_target"]]
        median = statistics.median(reached)
        figures[name] = {
            "median_compute_to_target": median if math.isfinite(median) else None,
            "ratio_to_random": round(median / random_median, 3) if math.isfinite(median) else None,
            "compute_to_target_per_seed": entry["to_target"],
            "missed": sum(1 for c in entry["to_target"] if c is None),
            "median_best_loss": round(statistics.median(entry["best"]), 4),
            "median_total_compute": statistics.median(entry["total_compute"]),
            "trials": statistics.median(entry["trials"]),
            "seconds": round(entry["seconds"], 2),
        }
    asha_ratio = figures["adaptive_asha"]["ratio_to_random"]
    aggressive_ratio = figures["adaptive_asha_aggressive"]["ratio_to_random"]
    print(
        json.dumps(
            {
                "benchmark": "hpo_quality",
                "figure": "median over seeds of the compute to reach random search's best "
                "final loss; ratio = method / random",
                "asha_to_random_ratio": asha_ratio,
                "asha_aggressive_to_random_ratio": aggressive_ratio,
                "target_ratio": TARGET_RATIO,
                # Per mode: standard hedges with less aggressive brackets (Determined's
                # default); aggressive is the single-bracket ASHA of Li et al.
                "meets_target": {
                    "standard": asha_ratio is not None and asha_ratio <= TARGET_RATIO,
                    "aggressive": aggressive_ratio is not None and aggressive_ratio <= TARGET_RATIO,
                },
                "methods": figures,
                "random_best_per_seed": [round(t, 4) for t in targets],
                "settings": {
                    "R": R,
                    "unit": "batches",
                    "random_trials": N,
                    "adaptive_asha_trials": asha_trials,
                    "workers": WORKERS,
                    "seeds": SEEDS,
                    "configs": {k: v for k, v in methods.items() if not isinstance(v, str)},
                    "space": SPACE,
                },
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
