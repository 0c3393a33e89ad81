"""The Python interpreter and the operating system."""

from __future__ import annotations

import platform
import sys
from typing import Any


def python_section(out: dict[str, Any], problems: list[str]) -> None:
    out["version"] = platform.python_version()
    out["implementation"] = platform.python_implementation()
    out["executable"] = sys.executable


def os_section(out: dict[str, Any], problems: list[str]) -> None:
    out["system"] = platform.system()
    out["kernel"] = platform.release()
    out["machine"] = platform.machine()
    try:
        out["distribution"] = platform.freedesktop_os_release().get("PRETTY_NAME")
    except OSError:
        out["distribution"] = None  # not Linux, or no /etc/os-release: nothing wrong
    # On glibc it asks confstr, which is instant; on musl and others it scans the
    # interpreter's binary.
    out["libc"] = " ".join(part for part in platform.libc_ver() if part)
