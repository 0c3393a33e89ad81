"""Backend names to classes. A backend whose SDK is missing is left out with the reason."""

from __future__ import annotations

from shipyard.backends.base import Backend
from shipyard.common.errors import InvalidRequest, NotSupportedYet

_KNOWN = {"local": "shipyard.backends.local.backend:LocalBackend"}
_PLANNED = ("docker", "podman", "ray", "slurm", "kubernetes")


def backend_class(name: str) -> type[Backend]:
    if name in _PLANNED:
        raise NotSupportedYet(f"the {name} backend is not supported yet; use 'local'")
    target = _KNOWN.get(name)
    if target is None:
        raise InvalidRequest(f"unknown backend {name!r}; known: {', '.join(_KNOWN)}")
    module_name, _, class_name = target.partition(":")
    module = __import__(module_name, fromlist=[class_name])
    return getattr(module, class_name)
