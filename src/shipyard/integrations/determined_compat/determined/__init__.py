"""Shipyard's `determined`: Determined's training-side API on Shipyard (docs/determined.md).

Inside a Shipyard trial `import determined` is this package, not Determined's; set
SHIPYARD_DETERMINED_SHIM=0 in the experiment's environment variables to turn it off.
What Shipyard lacks raises NotSupportedYet when used, never on import.
"""

from __future__ import annotations

import importlib
from typing import Any

from . import core
from ._errors import InvalidHP, NotSupportedYet
from ._info import ClusterInfo, RendezvousInfo, ResourcesInfo, TrialInfo, get_cluster_info

__all__ = [
    "LOG_FORMAT",
    "ClusterInfo",
    "InvalidHP",
    "NotSupportedYet",
    "RendezvousInfo",
    "ResourcesInfo",
    "TrialInfo",
    "core",
    "get_cluster_info",
]

# Marks this package as Shipyard's (tests and users can tell it from Determined's).
__shipyard_shim__ = True
__version__ = "0.38.1+shipyard"

# Determined's documented format for the logging module.
LOG_FORMAT = "%(levelname)s: [%(process)s] %(name)s: %(message)s"

# Loaded on first use: each needs its framework (`det.transformers` needs transformers).
_SUBMODULES = ("launch", "pytorch", "transformers", "keras", "experimental")


def __getattr__(name: str) -> Any:
    if name in _SUBMODULES:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module 'determined' has no attribute {name!r}")
