"""Waiting for a condition in a benchmark: poll often, give up with a clear message."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def poll(fetch: Callable[[], T], what: str, timeout_s: float = 60.0, every_s: float = 0.01) -> T:
    """Call fetch every `every_s` until it returns something truthy."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        result = fetch()
        if result:
            return result
        time.sleep(every_s)
    raise TimeoutError(f"no {what} after {timeout_s} s")
