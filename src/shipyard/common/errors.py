"""Typed errors shared by every layer; the server maps each to one HTTP status.

No pydantic here: the trial side (shipyard.core) may import this module.
"""

from __future__ import annotations


class ShipyardError(Exception):
    """Base of every error Shipyard raises on purpose."""

    status_code = 500
    kind = "ShipyardError"

    def __init__(self, message: str, details: list[dict] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.details = details or []

    def to_dict(self) -> dict:
        return {"error": {"type": self.kind, "message": self.message, "details": self.details}}


class InvalidRequest(ShipyardError):
    status_code = 400
    kind = "InvalidRequest"


class Unauthorized(ShipyardError):
    """No credentials, or credentials the master does not accept (unknown, expired,
    revoked, a deactivated user, a wrong password)."""

    status_code = 401
    kind = "Unauthorized"


class Forbidden(ShipyardError):
    """The caller is known but may not do this (a task token on a user route, a
    non-admin on an admin route, a write without its CSRF token)."""

    status_code = 403
    kind = "Forbidden"


class TooManyRequests(ShipyardError):
    """Too many failed logins for an account or from an address: wait and try again."""

    status_code = 429
    kind = "TooManyRequests"


class NotFound(ShipyardError):
    status_code = 404
    kind = "NotFound"


class Conflict(ShipyardError):
    """The object exists but is in a state that does not allow the request."""

    status_code = 409
    kind = "Conflict"


class TooLarge(ShipyardError):
    status_code = 413
    kind = "TooLarge"


class ConfigError(ShipyardError):
    """An experiment config is invalid; details carry one entry per problem:
    {"path": "searcher.metric", "message": "...", "line": 12 or None, "column": 3 or None}."""

    status_code = 422
    kind = "ConfigError"

    def __str__(self) -> str:
        lines = [self.message]
        for d in self.details:
            where = d.get("path") or "<config>"
            if d.get("line"):
                where += f" (line {d['line']}, column {d.get('column') or 1})"
            lines.append(f"  {where}: {d['message']}")
        return "\n".join(lines)


class NotSupportedYet(ConfigError):
    """A field Shipyard parses but does not act on yet."""

    kind = "NotSupportedYet"


class MasterUnavailable(ShipyardError):
    """The client could not reach the master."""

    status_code = 503
    kind = "MasterUnavailable"


class CheckpointWriteError(ShipyardError, OSError):
    """A checkpoint's files could not be written (disk full, permission denied, read-only
    storage): raised by ``ctx.checkpoint`` on the trial side, never sent by the master.

    Also an OSError (``errno`` is the original one), so code that caught the OSError before
    keeps working. The message names the checkpoint's location and the OS error."""

    kind = "CheckpointWriteError"

    def __init__(self, message: str, *, errno: int | None = None) -> None:
        super().__init__(message)
        self.errno = errno


ERRORS_BY_KIND: dict[str, type[ShipyardError]] = {
    cls.kind: cls
    for cls in (
        ShipyardError,
        InvalidRequest,
        Unauthorized,
        Forbidden,
        TooManyRequests,
        NotFound,
        Conflict,
        TooLarge,
        ConfigError,
        NotSupportedYet,
        MasterUnavailable,
    )
}
