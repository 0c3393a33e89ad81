"""Reading the trial environment (docs/architecture.md, "Trial environment") with clear errors."""

from __future__ import annotations

import json
import os
from typing import Any

from shipyard.common.errors import InvalidRequest


def env_str(name: str) -> str | None:
    """The variable's value, or None when it is unset or empty."""
    value = os.environ.get(name, "").strip()
    return value or None


def env_int(name: str, default: int | None = None) -> int | None:
    value = env_str(name)
    if value is None:
        return default
    try:
        return int(value)
    except ValueError:
        raise InvalidRequest(
            f"environment variable {name} must be an integer, got {value!r}"
        ) from None


def env_json(name: str) -> Any:
    """The decoded JSON value of the variable, or None when it is unset or empty."""
    value = env_str(name)
    if value is None:
        return None
    try:
        return json.loads(value)
    except ValueError as exc:
        raise InvalidRequest(f"environment variable {name} is not valid JSON: {exc}") from None
