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


def backend_class(name: str) -> type[Backend]:
    """The class of a backend type: what it can do is in its mixins (backends/base.py).
    Its module imports no SDK, so this is cheap."""
    check_type(name)
    return _load(_KNOWN[name][1])


def types_with(capability: type) -> list[str]:
    """The backend types whose class has this mixin, in the registry's order."""
    return [name for name in _KNOWN if issubclass(backend_class(name), capability)]


def make_backend(options: BackendOptions, *, pool: str) -> Backend:
    """The backend of one pool on an engine of its own (the pools of the master's machine
    share one backend, made by the master)."""
    return backend_class(options.type)(options, pool=pool)  # type: ignore[call-arg]
