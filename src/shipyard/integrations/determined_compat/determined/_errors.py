"""The exceptions of Shipyard's `determined`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


class InvalidHP(Exception):
    """Determined's signal that a trial's hyperparameters cannot work. Raised by user code
    out of ``with det.core.init()``: as in Determined the process exits with code 0, so
    the trial ends without a restart; its run records this message (docs/determined.md)."""

    def __init__(self, msg: str = "...") -> None:
        super().__init__(msg)


class NotSupportedYet(NotImplementedError):
    """A part of Determined's API that Shipyard does not have yet."""


def not_supported(what: str, instead: str = "") -> NotSupportedYet:
    """The error for a Determined feature Shipyard lacks, raised when it is used."""
    hint = f"; {instead}" if instead else ""
    return NotSupportedYet(
        f"{what} is not supported yet by Shipyard's Determined compatibility (see "
        f"docs/determined.md){hint}"
    )


def missing_module(module: str, instead: str) -> Callable[[str], Any]:
    """A module ``__getattr__`` for a part of Determined Shipyard lacks: importing it works
    (a script may import more than it uses); using any of its names raises."""

    def __getattr__(name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        raise not_supported(f"{module}.{name}", instead)

    return __getattr__
