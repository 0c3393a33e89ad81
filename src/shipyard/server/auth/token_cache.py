"""User tokens already looked up, by their hash, so a user request needs no database read.

Only this master process writes tokens and users, so the cache cannot go stale behind its
back: every change that ends a token (a revocation, a logout, a deactivation, a password
change) clears it, and a lookup that raced with such a change is not kept (the generation
it started in is gone). Expiry is checked on every hit."""

from __future__ import annotations

import threading
import time
from datetime import datetime
from typing import Any

from shipyard.server.orm import utcnow

TOUCH_EVERY_S = 60.0  # how often a token's last_used_at is written while it is in use
MAX_ENTRIES = 10_000  # past this the cache starts over (a master has far fewer live tokens)


class TokenCache:
    def __init__(self) -> None:
        self._entries: dict[str, tuple[Any, datetime | None]] = {}
        self._touched: dict[str, float] = {}
        self._lock = threading.Lock()
        self.generation = 0

    def get(self, digest: str) -> Any | None:
        with self._lock:
            entry = self._entries.get(digest)
            if entry is None:
                return None
            value, expires_at = entry
            if expires_at is not None and expires_at <= utcnow():
                del self._entries[digest]
                return None
            return value

    def put(self, digest: str, value: Any, expires_at: datetime | None, generation: int) -> None:
        """Keep a lookup made in `generation` (dropped if the cache was cleared since)."""
        with self._lock:
            if generation != self.generation:
                return
            if len(self._entries) >= MAX_ENTRIES:
                self._entries.clear()
            self._entries[digest] = (value, expires_at)

    def due_for_touch(self, digest: str) -> bool:
        """Whether last_used_at should be written now (and note that it is)."""
        now = time.monotonic()
        with self._lock:
            if now - self._touched.get(digest, -TOUCH_EVERY_S) < TOUCH_EVERY_S:
                return False
            self._touched[digest] = now
            return True

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self.generation += 1
