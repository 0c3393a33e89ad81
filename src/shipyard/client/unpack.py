"""Unpacking a tar from the master without letting any member escape the target directory."""

from __future__ import annotations

import tarfile
from pathlib import Path, PurePosixPath
from typing import IO

from shipyard.common.errors import InvalidRequest


def escapes(name: str) -> bool:
    """Whether a relative path from the master (a tar member, a checkpoint file) is absolute
    or has a `..` component: written to overwrite files outside the target directory."""
    path = PurePosixPath(name)
    return name.startswith(("/", "\\")) or path.is_absolute() or ".." in path.parts


def check_member_name(name: str) -> None:
    """Refuse absolute paths and `..` components (a tar written to overwrite other files)."""
    if escapes(name):
        raise InvalidRequest(
            f"archive member {name!r} points outside the target directory; nothing was unpacked"
        )


def _open(archive: Path | IO[bytes]) -> tarfile.TarFile:
    if isinstance(archive, Path):
        return tarfile.open(archive, "r:*")
    return tarfile.open(fileobj=archive, mode="r:*")


def safe_extract_tar(archive: Path | IO[bytes], dest: Path) -> list[str]:
    """Extract a tar (a path or a seekable binary file; any compression) into dest after
    checking every member; returns the names of the regular files extracted."""
    try:
        with _open(archive) as tar:
            members = tar.getmembers()
            for member in members:
                check_member_name(member.name)
            dest.mkdir(parents=True, exist_ok=True)
            # The "data" filter also refuses links pointing outside dest and special files.
            tar.extractall(dest, members=members, filter="data")
    except tarfile.FilterError as exc:
        raise InvalidRequest(f"refused to unpack the archive: {exc}") from exc
    except (tarfile.TarError, EOFError) as exc:
        raise InvalidRequest(f"the archive is not a readable tar file: {exc}") from exc
    return [member.name for member in members if member.isfile()]
