"""The deep-learning framework the rank runs, if it imported one before the capture: it is
read from sys.modules, never imported (importing torch takes seconds, and a trial that
does not use it must not pay for it)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any


def framework_section(out: dict[str, Any], problems: list[str]) -> None:
    torch = sys.modules.get("torch")
    if torch is None:
        return
    version = getattr(torch, "version", None)
    info: dict[str, Any] = {
        "version": _plain(getattr(torch, "__version__", None)),
        "cuda": _plain(getattr(version, "cuda", None)),
        "debug": _plain(getattr(version, "debug", None)),
    }
    out["torch"] = info
    info["cudnn"] = _asked(lambda: torch.backends.cudnn.version(), "cudnn", problems)
    info["cpu_capability"] = _asked(
        lambda: torch.backends.cpu.get_cpu_capability(), "cpu_capability", problems
    )
    info["nccl"] = _asked(lambda: _nccl(torch), "nccl", problems)


def _nccl(torch: Any) -> Any:
    # Asking NCCL's version on a machine without CUDA fails: None there.
    if not torch.cuda.is_available():
        return None
    version = torch.cuda.nccl.version()
    return ".".join(map(str, version)) if isinstance(version, tuple) else version


def _asked(ask: Callable[[], Any], what: str, problems: list[str]) -> Any:
    try:
        return _plain(ask())
    except AttributeError:
        return None  # an older torch without it
    except Exception as exc:  # noqa: BLE001 - a problem in the record, never a raise
        problems.append(f"torch {what}: {type(exc).__name__}: {exc}")
        return None


def _plain(value: Any) -> Any:
    """A JSON value: torch's version strings are str subclasses, anything else odd is text."""
    if value is None or isinstance(value, bool | int | float):
        return value
    return str(value)
