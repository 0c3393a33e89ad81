"""Running Ray Tune beside Shipyard in one benchmark: quiet stdout, and a missing or broken
Ray reported in the JSON instead of failing the run."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any


def as_epoch_s(moment: datetime) -> float:
    # The API's times are UTC; a naive one is UTC too.
    return (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).timestamp()


@contextlib.contextmanager
def stdout_to_stderr() -> Iterator[None]:
    """Ray prints banners and tables; a benchmark's stdout carries only the JSON result."""
    sys.stdout.flush()
    saved = os.dup(1)
    os.dup2(2, 1)
    try:
        with contextlib.redirect_stdout(sys.stderr):
            yield
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)


def tune_figures(results: Any, trials: int, elapsed_s: float, **extra: Any) -> dict[str, Any]:
    """What every benchmark reports of a Tuner.fit() that ran ``trials`` trials in
    ``elapsed_s``, with the benchmark's ``extra`` figures."""
    import ray

    return {
        "version": ray.__version__,
        "trials": trials,
        "errors": results.num_errors,
        **extra,
        "elapsed_s": round(elapsed_s, 3),
        "trials_per_s": round(trials / elapsed_s, 3),
    }


def add_ray_figures(result: dict[str, Any], ray_figures: Callable[[], dict[str, Any]]) -> None:
    """result["ray"] from ray_figures(), and result["shipyard_over_ray"] from both
    trials_per_s; when Ray is missing or fails, result["ray_reason"] says why."""
    try:
        import ray  # noqa: F401 - only to know whether the peer can run
    except ImportError as exc:
        result["ray"] = None
        result["ray_reason"] = f"ray is not installed ({exc}); `make bench` tries to install it"
        return
    try:
        with stdout_to_stderr():
            result["ray"] = ray_figures()
    except Exception as exc:  # a broken Ray install: report it, keep Shipyard's figures
        result["ray"] = None
        result["ray_reason"] = f"Ray Tune failed: {exc!r}"
        return
    result["shipyard_over_ray"] = round(
        result["shipyard"]["trials_per_s"] / result["ray"]["trials_per_s"], 3
    )
