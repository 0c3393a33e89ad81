"""Password login: the check, and the limits on failed attempts.

An unknown user, a deactivated one, a service account and a wrong password all get the same
answer after the same work (one Argon2 verification), and the failure count is kept per
account name whether or not the account exists, so neither the answer, its time nor the
lockout tells which names exist. Counts live in the master's memory: a restart forgets them.
"""

from __future__ import annotations

import threading
import time
from collections import defaultdict, deque

from sqlalchemy.orm import Session

from shipyard.common.errors import TooManyRequests, Unauthorized
from shipyard.server import orm
from shipyard.server.auth.passwords import verify_password
from shipyard.server.services import users

WRONG = "wrong username or password"


class LoginGuard:
    """Refuses logins after too many failures in a window, per account and per address."""

    def __init__(
        self, *, per_account: int = 10, per_address: int = 300, window_s: float = 900.0
    ) -> None:
        self.per_account = per_account
        self.per_address = per_address
        self.window_s = window_s
        self._failures: dict[str, deque[float]] = defaultdict(deque)
        self._lock = threading.Lock()

    def check(self, username: str, address: str) -> None:
        with self._lock:
            now = time.monotonic()
            for key, limit in (
                (f"user:{username}", self.per_account),
                (f"addr:{address}", self.per_address),
            ):
                recent = self._recent(key, now)
                if len(recent) >= limit:
                    wait = int(recent[0] + self.window_s - now) + 1
                    who = "this account" if key.startswith("user:") else "this address"
                    raise TooManyRequests(
                        f"too many failed logins for {who}; try again in {wait} s"
                    )

    def failed(self, username: str, address: str) -> None:
        with self._lock:
            now = time.monotonic()
            self._failures[f"user:{username}"].append(now)
            self._failures[f"addr:{address}"].append(now)

    def succeeded(self, username: str) -> None:
        with self._lock:
            self._failures.pop(f"user:{username}", None)

    def _recent(self, key: str, now: float) -> deque[float]:
        recent = self._failures[key]
        while recent and recent[0] <= now - self.window_s:
            recent.popleft()
        return recent


def authenticate(
    username: str, password: str, *, address: str, guard: LoginGuard, session: Session
) -> orm.User:
    """The user whose password this is; Unauthorized (after the same work) otherwise."""
    guard.check(username, address)
    user = users.find(username, session=session)
    can_log_in = user is not None and user.active and not user.is_service
    if verify_password(user.password_hash if can_log_in and user else None, password):
        assert user is not None
        guard.succeeded(username)
        return user
    guard.failed(username, address)
    raise Unauthorized(WRONG)
