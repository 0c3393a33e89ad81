"""Unpacking a tar without letting any member escape the target directory: a checkpoint the
SDK downloads from the master, a run's code snapshot on a node that shares nothing with it.
Standard library only: the trial side (shipyard.launch) imports it too."""

from __future__ import annotations

import tarfile
from collections.abc import Iterable
from pathlib import Path, PurePosixPath
from typing import IO

from shipyard.common.errors import InvalidRequest

# Python 3.11.4 and 3.12 brought tarfile's extraction filters; Debian 12's python3 (3.11.2)
# has none, and safe_extract_tar then checks the members by hand.
_FILTER_ERRORS = getattr(tarfile, "FilterError", ())


class MemberOutside(InvalidRequest):
    """A member whose path, or the target of a link it is, is outside the target directory."""

    def __init__(self, member: str, message: str) -> None:
        super().__init__(message)
        self.member = member


def escapes(name: str) -> bool:
    """Whether a relative path from the master (a tar member, a checkpoint file) is absolute
    or has a `..` component: written to overwrite files outside the target directory."""
    path = PurePosixPath(name)
    return name.startswith(("/", "\\")) or path.is_absolute() or ".." in path.parts


def check_member_name(name: str) -> None:
    """Refuse absolute paths and `..` components (a tar written to overwrite other files)."""
    if escapes(name):
        raise MemberOutside(
            name,
            f"archive member {name!r} points outside the target directory; nothing was unpacked",
        )


def _open(archive: Path | IO[bytes]) -> tarfile.TarFile:
    if isinstance(archive, Path):
        return tarfile.open(archive, "r:*")
    return tarfile.open(fileobj=archive, mode="r:*")


def safe_extract_tar(archive: Path | IO[bytes], dest: Path) -> list[str]:
    """Extract a tar (a path or a seekable binary file; any compression) into dest after
    checking every member; returns the names of the regular files extracted. InvalidRequest
    (MemberOutside for a member outside dest) when it is refused or unreadable; a refused
    archive leaves nothing behind, unless the extraction filter refuses a member midway."""
    try:
        with _open(archive) as tar:
            members = tar.getmembers()
            for member in members:
                check_member_name(member.name)
            filters = hasattr(tarfile, "data_filter")
            if not filters:
                _check_by_hand(members)
            dest.mkdir(parents=True, exist_ok=True)
            if filters:
                # The "data" filter also refuses links pointing outside dest and special files.
                tar.extractall(dest, members=members, filter="data")
            else:
                tar.extractall(dest, members=members)
    except _FILTER_ERRORS as exc:
        raise InvalidRequest(f"refused to unpack the archive: {exc}") from exc
    except (tarfile.TarError, EOFError) as exc:
        raise InvalidRequest(f"the archive is not a readable tar file: {exc}") from exc
    return [member.name for member in members if member.isfile()]


def _check_by_hand(members: Iterable[tarfile.TarInfo]) -> None:
    """The data filter's checks that matter here, for a Python without it: each member a
    file, a directory, or a link to a path inside dest (a symbolic link's target taken from
    its own directory, without `..`; a hard link's from the archive's root)."""
    for member in members:
        if member.issym():
            target = str(PurePosixPath(member.name).parent / member.linkname)
        elif member.islnk():
            target = member.linkname
        elif member.isfile() or member.isdir():
            continue
        else:
            raise InvalidRequest(
                f"refused to unpack the archive: member {member.name!r} is a special file"
            )
        if escapes(target):
            raise MemberOutside(
                member.name,
                f"refused to unpack the archive: member {member.name!r} links to "
                f"{member.linkname!r}, outside the target directory",
            )
