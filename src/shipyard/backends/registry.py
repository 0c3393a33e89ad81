"""Backend types to their option models and classes. A backend's SDK is imported only when a
pool of that type is made, so a master without Ray installed runs every other pool."""

from __future__ import annotations

import importlib
from typing import Any

from shipyard.backends.base import Backend
from shipyard.backends.options import BackendOptions
from shipyard.common.errors import ConfigError

# type -> (options model, backend class), as "module:name" so nothing heavy loads here.
_KNOWN: dict[str, tuple[str, str]] = {
    "local": (
        "shipyard.backends.options:LocalOptions",
        "shipyard.backends.local.backend:LocalBackend",
    ),
    "ray": ("shipyard.backends.ray.options:RayOptions", "shipyard.backends.ray.backend:RayBackend"),
    "slurm": (
        "shipyard.backends.slurm.options:SlurmOptions",
        "shipyard.backends.slurm.backend:SlurmBackend",
    ),
    "kubernetes": (
        "shipyard.backends.kubernetes.options:KubernetesOptions",
        "shipyard.backends.kubernetes.backend:KubernetesBackend",
    ),
}


def _load(target: str) -> Any:
    module_name, _, name = target.partition(":")
    return getattr(importlib.import_module(module_name), name)


def options_models() -> dict[str, type[BackendOptions]]:
    """Each backend type's settings model (pydantic only: no SDK is imported)."""
    return {name: _load(models) for name, (models, _cls) in _KNOWN.items()}


def check_type(name: str) -> None:
    if name in _KNOWN:
        return
    raise ConfigError(f"unknown backend type {name!r}; known: {', '.join(_KNOWN)}")


def make_backend(options: BackendOptions, *, pool: str) -> Backend:
    """The backend of one pool on an engine of its own (local pools share the master's one
    LocalBackend, made by the master)."""
    check_type(options.type)
    cls: type[Backend] = _load(_KNOWN[options.type][1])
    return cls(options, pool=pool)  # type: ignore[call-arg]
