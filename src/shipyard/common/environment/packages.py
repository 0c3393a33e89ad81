"""The installed distributions, name -> version, read straight from the metadata files on
the import path: the header lines of each *.dist-info/METADATA and *.egg-info/PKG-INFO, up
to the first blank line. Not importlib.metadata.distributions() (an object a distribution
and whole files parsed: too slow at a trial's start), never pip freeze (a process)."""

from __future__ import annotations

import os
import re
from collections.abc import Iterable

# Enough for the headers of any real distribution; a file with no blank line and no Name
# (garbage) is not read to its end.
MAX_HEADER_BYTES = 256 * 1024

_RUNS = re.compile(r"[-_.]+")


def canonical_name(name: str) -> str:
    """PEP 503: lower case, each run of -, _ and . one -."""
    return _RUNS.sub("-", name).lower()


def installed_packages(path: Iterable[str], out: dict[str, str], problems: list[str]) -> None:
    """Fills `out`; a distribution whose metadata cannot be read is a problem naming its
    directory, and the others are still recorded."""
    for entry in path:
        directory = entry or os.getcwd()  # "" on sys.path is the working directory
        try:
            with os.scandir(directory) as found:
                names = sorted(
                    e.name for e in found if e.name.endswith((".dist-info", ".egg-info"))
                )
        except OSError:
            continue  # a zip file, a directory that is gone: import passes over them too
        for name in names:
            where = os.path.join(directory, name)
            try:
                dist, version = _name_and_version(where)
            except OSError as exc:
                problems.append(f"{where}: cannot read its metadata ({exc.strerror or exc})")
                continue
            if not dist or not version:
                problems.append(f"{where}: its metadata has no {'Name' if not dist else 'Version'}")
                continue
            # The first on the path wins, as it does for import.
            out.setdefault(canonical_name(dist), version)


def _name_and_version(where: str) -> tuple[str | None, str | None]:
    if where.endswith(".dist-info"):
        file = os.path.join(where, "METADATA")
    elif os.path.isdir(where):
        file = os.path.join(where, "PKG-INFO")
    else:
        file = where  # an old egg-info is the PKG-INFO file itself
    name = version = None
    read = 0
    with open(file, "rb") as f:
        for raw in f:
            read += len(raw)
            line = raw.decode("utf-8", errors="replace")
            if not line.strip() or read > MAX_HEADER_BYTES:
                break  # the end of the headers
            key, colon, value = line.partition(":")
            if not colon or key[:1].isspace():
                continue  # a continuation line
            key = key.strip().lower()
            if key == "name" and name is None:
                name = value.strip()
            elif key == "version" and version is None:
                version = value.strip()
            if name and version:
                break
    return name, version
