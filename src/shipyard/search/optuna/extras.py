"""Optuna is an optional extra: imported when an optuna searcher is built, never when a
module of this package is imported, so the registry lists the searcher on an install
without it and refuses it with a message naming the extra."""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from contextlib import contextmanager

from shipyard.common.errors import NotSupportedYet

OPTUNA_EXTRA = "the optuna searcher needs Optuna: pip install 'shipyard[optuna]'"
GP_EXTRA = "the gp sampler needs torch and scipy: pip install 'shipyard[optuna,torch]'"
CMAES_EXTRA = "the cmaes sampler needs cmaes: pip install 'shipyard[optuna]'"


def _extra_missing(field: str, message: str) -> NotSupportedYet:
    path = f"searcher.{field}"
    return NotSupportedYet(f"{path}: {message}", details=[{"path": path, "message": message}])


def import_optuna(sampler: str) -> None:
    """Import Optuna (and what the sampler needs), quiet its logging; NotSupportedYet naming
    the extra to install when something is missing."""
    try:
        import optuna
    except ImportError:
        raise _extra_missing("name", OPTUNA_EXTRA) from None
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    try:
        if sampler == "gp":
            import scipy  # noqa: F401
            import torch  # noqa: F401
        elif sampler == "cmaes":
            import cmaes  # noqa: F401
    except ImportError:
        raise _extra_missing("sampler", GP_EXTRA if sampler == "gp" else CMAES_EXTRA) from None


@contextmanager
def quiet() -> Iterator[None]:
    """Optuna marks some samplers and arguments experimental and warns at each use."""
    from optuna.exceptions import ExperimentalWarning

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ExperimentalWarning)
        yield
