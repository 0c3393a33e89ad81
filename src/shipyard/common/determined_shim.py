"""Where the `determined` compatibility package is, and putting it on a trial's PYTHONPATH.

Determined users' scripts `import determined`; inside a Shipyard trial that name must be
Shipyard's shim (shipyard/integrations/determined_compat/determined), even when the image
ships the real package, whose `core.init()` quietly does nothing off its own cluster. So
every launch puts the shim's directory first on the trial's PYTHONPATH, computed where the
trial runs (the master's install for local processes, the mounted package in a container,
the node's own install for Ray runners and share-nothing nodes). Outside trials nothing
changes. SHIPYARD_DETERMINED_SHIM=0 in the trial's environment turns it off.
"""

from __future__ import annotations

import os
from collections.abc import MutableMapping

SHIM_ENV = "SHIPYARD_DETERMINED_SHIM"
_OFF = ("0", "false", "no", "off")
# Relative to the directory that holds the `shipyard` package.
_SHIM_PARTS = ("shipyard", "integrations", "determined_compat")


def lib_root() -> str:
    """The directory holding this process's `shipyard` package (what goes on sys.path)."""
    import shipyard

    return os.path.dirname(os.path.dirname(os.path.abspath(shipyard.__file__)))


def shim_dir(root: str | None = None) -> str:
    """The directory to put on sys.path for `import determined` to be the shim; ``root``:
    the directory holding the `shipyard` package there (default: this process's)."""
    if root is None:
        return os.path.join(lib_root(), *_SHIM_PARTS)
    # A path inside a container or on another node: POSIX, whatever this machine is.
    return "/".join((root.rstrip("/"), *_SHIM_PARTS))


def shim_enabled(env: MutableMapping[str, str]) -> bool:
    return env.get(SHIM_ENV, "").strip().lower() not in _OFF


def with_shim(env: MutableMapping[str, str], root: str | None = None) -> MutableMapping[str, str]:
    """Put the shim's directory first on ``env``'s PYTHONPATH (once), unless the trial
    turned it off. Returns ``env``, changed in place."""
    if not shim_enabled(env):
        return env
    path = shim_dir(root)
    rest = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p and p != path]
    env["PYTHONPATH"] = os.pathsep.join([path, *rest])
    return env
