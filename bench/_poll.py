"""Waiting for a condition in a benchmark: the tests' poll helper (tests/fixtures/poll.py),
polling more often by default (the benchmarks time what they wait for)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the benchmarks run as scripts

from tests.fixtures.poll import poll as _poll  # noqa: E402

T = TypeVar("T")


def poll(fetch: Callable[[], T], what: str, timeout_s: float = 60.0, every_s: float = 0.01) -> T:
    """Call fetch every `every_s` until it returns something truthy."""
    return _poll(fetch, what, timeout_s=timeout_s, every_s=every_s)
