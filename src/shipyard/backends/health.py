"""An engine's health, checked in the background: ``health()`` must never block the master's
loops on a slow or dead engine, so it returns the last answer and, when that answer is older
than ``max_age_s``, starts one thread that asks again."""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")


class BackgroundProbe(Generic[T]):
    """``probe()``'s last answer, asked again in a background thread (one at a time) when it
    is older than ``max_age_s``. ``check()`` asks now, in the caller's thread (e.g. once in
    the backend's constructor)."""

    def __init__(self, probe: Callable[[], T], initial: T, *, max_age_s: float, name: str):
        self._probe = probe
        self._max_age_s = max_age_s
        self._name = name
        self._lock = threading.Lock()
        self._answer = initial
        # When the answer was given (monotonic). Not 0.0 for "never": the monotonic clock
        # may itself be smaller than max_age_s (a machine booted minutes ago).
        self._at = -math.inf
        self._thread: threading.Thread | None = None
        self._closed = False

    @property
    def last(self) -> T:
        """The last answer, without asking again."""
        with self._lock:
            return self._answer

    def check(self) -> T:
        """Ask now and keep the answer."""
        answer = self._probe()
        with self._lock:
            self._answer, self._at = answer, time.monotonic()
        return answer

    def get(self) -> T:
        """The last answer; a stale one is asked again in the background (never blocks)."""
        with self._lock:
            stale = time.monotonic() - self._at > self._max_age_s
            if stale and not self._closed and (self._thread is None or not self._thread.is_alive()):
                self._thread = threading.Thread(target=self.check, daemon=True, name=self._name)
                self._thread.start()
            return self._answer

    def expire(self) -> None:
        """The answer is stale from now on: the next ``get()`` asks again."""
        with self._lock:
            self._at = -math.inf

    def close(self) -> None:
        """No background check is started any more."""
        with self._lock:
            self._closed = True
