"""The Python SDK: `Shipyard(master=None)` over the master's REST API.

    from shipyard.client import Shipyard
    sy = Shipyard()                       # master from SHIPYARD_MASTER, master.json or the default
    exp = sy.create_experiment("const.yaml", ".")
    exp = sy.wait(exp.id, timeout=600)
    print(exp.state, exp.best_validation)

Its token is SHIPYARD_TOKEN, else the one `shipyard user login` (or, on a laptop, the
master itself) kept for this master in $SHIPYARD_HOME/auth.json, else `token=`.

The modules below (one per resource) take a `Session` and return the models of
shipyard.common.api; this facade only binds them to one session.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from shipyard.client.master_url import resolve_master_url
    from shipyard.client.sdk import Shipyard
    from shipyard.client.session import Session

# Loaded on first use: a program that needs one module of the package (the CLI its session,
# the master its credentials file) then does not import the facade's every response model.
_WHERE = {
    "Shipyard": "shipyard.client.sdk",
    "Session": "shipyard.client.session",
    "resolve_master_url": "shipyard.client.master_url",
}


def __getattr__(name: str) -> Any:
    if name not in _WHERE:  # a submodule (`from shipyard.client import trials`) loads as usual
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(_WHERE[name]), name)


__all__ = ["Session", "Shipyard", "resolve_master_url"]
