"""The context: the user's code directory, packed as a tar.gz and uploaded to the master."""

from __future__ import annotations

import gzip
import io
import os
import tarfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, NamedTuple, cast

from shipyard.client.ignore import IGNORE_FILE, IgnoreRules
from shipyard.client.session import Session
from shipyard.common.api import ContextUploaded
from shipyard.common.errors import InvalidRequest, TooLarge

DEFAULT_MAX_CONTEXT_MB = 96
LARGEST_FILES_SHOWN = 5
UPLOAD_CHUNK = 256 * 1024

# A transfer's progress: called with (bytes done, bytes in all) as it goes, e.g. a progress
# bar's update (shipyard.cli.output.transfer_bar); None: nothing is shown.
Progress = Callable[[int, int], None]


class ContextArchive(NamedTuple):
    data: bytes  # a gzip'd tar of the kept files, paths relative to the directory
    files: set[str]  # those relative paths, '/'-separated


def max_context_bytes() -> int:
    """The limit on a context's total file size: SHIPYARD_MAX_CONTEXT_MB, default 96 MiB."""
    raw = os.environ.get("SHIPYARD_MAX_CONTEXT_MB", str(DEFAULT_MAX_CONTEXT_MB))
    try:
        megabytes = float(raw)
    except ValueError:
        raise InvalidRequest(
            f"SHIPYARD_MAX_CONTEXT_MB must be a number of MiB, got {raw!r}"
        ) from None
    return int(megabytes * 2**20)


def collect_context_files(directory: Path) -> dict[str, Path]:
    """Relative path -> absolute path of every file the archive keeps, sorted by path."""
    root = Path(directory)
    if not root.is_dir():
        raise InvalidRequest(
            f"context directory {str(directory)!r} does not exist or is not a directory"
        )
    rules = IgnoreRules.for_directory(root)
    kept: dict[str, Path] = {}
    for current, dirnames, filenames in os.walk(root):
        base = Path(current).relative_to(root).as_posix()
        prefix = "" if base == "." else base + "/"
        # Pruning dirnames in place stops os.walk from descending into ignored directories.
        dirnames[:] = sorted(d for d in dirnames if not rules.is_ignored(prefix + d, is_dir=True))
        for name in filenames:
            relative = prefix + name
            path = Path(current) / name
            if relative != rules.source and rules.is_ignored(relative, is_dir=False):
                continue
            if path.is_file():  # follows symlinks to files; skips dangling links, sockets
                kept[relative] = path
    return dict(sorted(kept.items()))


def build_context(directory: str | Path, *, limit_bytes: int | None = None) -> ContextArchive:
    """Pack a directory (honouring .shipyardignore). Raises TooLarge, naming the largest
    files, when the kept files add up to more than the limit."""
    limit = max_context_bytes() if limit_bytes is None else limit_bytes
    files = collect_context_files(Path(directory))
    sizes = {relative: path.stat().st_size for relative, path in files.items()}
    total = sum(sizes.values())
    if total > limit:
        raise TooLarge(_too_large_message(directory, total, limit, sizes))

    def add_files(tar: tarfile.TarFile) -> None:
        for relative, path in files.items():
            info = tar.gettarinfo(str(path), arcname=relative)
            if info.issym() or info.islnk():
                info = tar.gettarinfo(str(path.resolve()), arcname=relative)
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            with path.open("rb") as handle:
                tar.addfile(info, handle)

    return ContextArchive(reproducible_archive(add_files), set(files))


def reproducible_archive(fill: Callable[[tarfile.TarFile], None]) -> bytes:
    """A gzip'd PAX tar of what ``fill`` adds. mtime=0 in the gzip header: the same files
    give the same archive, hence the same content id."""
    buffer = io.BytesIO()
    with gzip.GzipFile(fileobj=buffer, mode="wb", mtime=0) as gz:
        with tarfile.open(fileobj=gz, mode="w", format=tarfile.PAX_FORMAT) as tar:
            fill(tar)
    return buffer.getvalue()


def _too_large_message(directory: str | Path, total: int, limit: int, sizes: dict[str, int]) -> str:
    largest = sorted(sizes.items(), key=lambda item: (-item[1], item[0]))[:LARGEST_FILES_SHOWN]
    listing = ", ".join(f"{name} ({format_size(size)})" for name, size in largest)
    return (
        f"context directory {str(directory)!r} holds {format_size(total)} of files, over the "
        f"limit of {format_size(limit)}. Largest files: {listing}. Leave data and outputs out "
        f"with a {IGNORE_FILE} file, or raise SHIPYARD_MAX_CONTEXT_MB."
    )


def format_size(size: int) -> str:
    if size < 1024:
        return f"{size} B"
    if size < 2**20:
        return f"{size / 1024:.1f} KiB"
    return f"{size / 2**20:.1f} MiB"


def upload_context(
    session: Session, archive: bytes, *, progress: Progress | None = None
) -> ContextUploaded:
    """Upload a packed context; `progress` hears each chunk as it is sent."""
    content: Any = archive if progress is None else _chunks(archive, progress)
    data = session.post("/contexts", content=cast(bytes, content), content_type="application/gzip")
    return ContextUploaded.model_validate(data)


def _chunks(archive: bytes, progress: Progress) -> Iterator[bytes]:
    """The archive in chunks, each reported to `progress` once httpx has taken it."""
    total = len(archive)
    progress(0, total)
    for start in range(0, total, UPLOAD_CHUNK):
        yield archive[start : start + UPLOAD_CHUNK]
        progress(min(start + UPLOAD_CHUNK, total), total)
