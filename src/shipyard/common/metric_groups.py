"""Metric group names: one rule, checked by the trial side (before a report is queued) and
by the master (on every report it receives).

Standard library only: shipyard.core imports this module.
"""

from __future__ import annotations

import re
from typing import Any, TypeGuard

TRAINING = "training"
VALIDATION = "validation"  # the one group the searcher reads

# metric_keys.group is String(32); a letter first keeps names readable in URLs and the UI.
PATTERN = r"^[A-Za-z][A-Za-z0-9_.-]{0,31}$"
_VALID = re.compile(PATTERN[1:-1])  # fullmatch: "$" would also match before a final "\n"


def is_group(value: Any) -> TypeGuard[str]:
    return isinstance(value, str) and _VALID.fullmatch(value) is not None


def refusal(value: Any) -> str:
    """Why a value is_group refused is not a metric group name."""
    if not isinstance(value, str):
        return f"metric group must be a string, got {type(value).__name__} {value!r:.80}"
    return (
        f"metric group {value!r:.80} is not valid: it must match {PATTERN} (a letter, then "
        "at most 31 letters, digits, '_', '.' or '-')"
    )
