"""The environment a trial rank runs in, captured at its start (capture_environment), and
the differences between two runs' records (diff_runs). The capture side is standard
library only: shipyard.core imports it in every trial."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from shipyard.common.environment.canonical import canonical_json
    from shipyard.common.environment.capture import capture_environment
    from shipyard.common.environment.diff import Difference, diff_runs, missing_sections

__all__ = ["Difference", "canonical_json", "capture_environment", "diff_runs", "missing_sections"]

# Each name is imported when first asked for: a trial needs only the capture, and the
# diff's dataclasses (which import inspect) would add to every trial's start.
_MODULES = {
    "canonical_json": "canonical",
    "capture_environment": "capture",
    "Difference": "diff",
    "diff_runs": "diff",
    "missing_sections": "diff",
}


def __getattr__(name: str) -> Any:
    if name not in _MODULES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_MODULES[name]}"), name)
