"""Downsampled curves of ended trials, kept serialized between requests.

An experiment's curves are every trial's points of one metric: for 1,000 trials of 1,000
points, reading, downsampling and serializing them takes seconds, far over what a chart
that polls can wait. A trial that has ended gets no more points (reports of an ended trial
are refused in the write transaction that would store them), so its downsampled curve is
computed once; only live trials are read again. Bounded by size, least recently used out.
"""

from __future__ import annotations

import threading
from collections import OrderedDict

CurveKey = tuple[int, int, int]  # (trial id, metric key id, max_points)

DEFAULT_MAX_BYTES = 256 * 2**20


class CurveCache:
    def __init__(self, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        self.max_bytes = max_bytes
        self._items: OrderedDict[CurveKey, bytes] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()  # sync routes run in a thread pool

    def get(self, key: CurveKey) -> bytes | None:
        with self._lock:
            data = self._items.get(key)
            if data is not None:
                self._items.move_to_end(key)
            return data

    def put(self, key: CurveKey, data: bytes) -> None:
        """Keep the JSON of an ended trial's curve (b"": it has no point of that metric)."""
        with self._lock:
            old = self._items.pop(key, None)
            self._bytes -= len(old) if old is not None else 0
            self._items[key] = data
            self._bytes += len(data)
            while self._bytes > self.max_bytes and self._items:
                _, evicted = self._items.popitem(last=False)
                self._bytes -= len(evicted)
