"""Token formats. Every secret starts with `shy_` and a letter for its kind, so a leaked one
is found by grep (and by secret scanners):

- `shy_u_…` an API token (`shipyard token create`: automation, service accounts),
  `shy_s_…` a login session (a password login of the CLI or the web UI, 7 days; a password
  change ends the others), `shy_k_…` a single-use login ticket: 32 random bytes each; the
  master stores only their SHA-256 (enough for 256-bit random secrets, and cheap on every
  request).
- `shy_t_<trial>_<run>_<mac>` a trial's task token: an HMAC of its trial and run under the
  master's key, so it survives a master restart with nothing stored, is checked without the
  database on the metrics path, and names the one run it speaks for.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
import secrets
from pathlib import Path

PREFIX_CHARS = 12  # "shy_u_" and 6 characters of the secret: shown in token lists
LETTERS = {"api": "u", "session": "s", "ticket": "k"}
TASK = "shy_t_"
KEY_FILE = "auth.key"


def mint(kind: str) -> str:
    return f"shy_{LETTERS[kind]}_{secrets.token_urlsafe(32)}"


def digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def kind_of(token: str) -> str | None:
    """ "api", "session", "ticket", "task", or None for anything else."""
    if token.startswith(TASK):
        return "task"
    for kind, letter in LETTERS.items():
        if token.startswith(f"shy_{letter}_"):
            return kind
    return None


class TaskTokens:
    """Mints and checks trials' task tokens under one secret key."""

    def __init__(self, key: bytes) -> None:
        self._key = key

    @classmethod
    def of_home(cls, home: Path) -> TaskTokens:
        """The key in $SHIPYARD_HOME/auth.key (mode 0600), made on first start."""
        path = home / KEY_FILE
        if not path.exists():
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "wb") as out:
                out.write(secrets.token_bytes(32))
        return cls(path.read_bytes())

    def _mac(self, trial_id: int, run_id: int) -> str:
        mac = hmac.new(self._key, f"task:{trial_id}:{run_id}".encode(), hashlib.sha256)
        return base64.urlsafe_b64encode(mac.digest()).decode().rstrip("=")

    def mint(self, trial_id: int, run_id: int) -> str:
        return f"{TASK}{trial_id}_{run_id}_{self._mac(trial_id, run_id)}"

    def verify(self, token: str) -> tuple[int, int] | None:
        """(trial id, run id) of a genuine task token, else None."""
        try:
            trial, run, mac = token.removeprefix(TASK).split("_", 2)
            trial_id, run_id = int(trial), int(run)
        except ValueError:
            return None
        if not hmac.compare_digest(mac, self._mac(trial_id, run_id)):
            return None
        return trial_id, run_id
