"""Password hashing: Argon2id with OWASP's recommended minimum (19 MiB, 2 passes, 1 lane).

RFC 9106's low-memory profile (64 MiB, 3 passes, 4 lanes) took several times as long and
both cores of a 2-core master per login, which a burst of logins (or a guesser) would take
from the trials' reports. A hash keeps its parameters: a stronger setting later applies to
passwords set from then on."""

from __future__ import annotations

from functools import cache

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError

from shipyard.common.errors import InvalidRequest

MIN_LENGTH = 8
_hasher = PasswordHasher(time_cost=2, memory_cost=19 * 1024, parallelism=1)


def hash_password(password: str) -> str:
    check_strength(password)
    return _hasher.hash(password)


def check_strength(password: str) -> None:
    if len(password) < MIN_LENGTH:
        raise InvalidRequest(f"a password needs at least {MIN_LENGTH} characters")


@cache
def _decoy_hash() -> str:
    return _hasher.hash("a decoy: verified when the user is unknown")


def verify_password(password_hash: str | None, password: str) -> bool:
    """Whether the password matches. Without a hash (unknown user, no password) a decoy
    is verified anyway, so every failure costs the same time."""
    try:
        _hasher.verify(password_hash or _decoy_hash(), password)
    except (VerificationError, InvalidHashError):
        return False
    return password_hash is not None
