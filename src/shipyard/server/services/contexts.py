"""Code snapshots: stored once by content hash, unpacked into each trial's working dir."""

from __future__ import annotations

import hashlib
import os
import tarfile
import tempfile
from collections.abc import Iterable
from pathlib import Path

from sqlalchemy.orm import Session

from shipyard.common.errors import InvalidRequest, NotFound, TooLarge
from shipyard.server import orm


def context_path(home: Path, context_id: str) -> Path:
    return home / "contexts" / f"{context_id}.tar.gz"


def save_archive(
    chunks: Iterable[bytes], *, home: Path, limit_bytes: int
) -> tuple[str, int, set[str]]:
    """Write an uploaded archive to disk (bounded) and check it: (id, size, files).
    No database here: this can take seconds for a large context."""
    digest = hashlib.sha256()
    size = 0
    fd, tmp = tempfile.mkstemp(dir=home / "contexts", suffix=".part")
    try:
        with os.fdopen(fd, "wb") as out:
            for chunk in chunks:
                size += len(chunk)
                if size > limit_bytes:
                    raise TooLarge(
                        f"context archive is over the limit of {limit_bytes // 2**20} MiB; "
                        "leave large files out with .shipyardignore"
                    )
                digest.update(chunk)
                out.write(chunk)
        files = list_archive(Path(tmp))
        context_id = digest.hexdigest()
        os.replace(tmp, context_path(home, context_id))
    finally:
        Path(tmp).unlink(missing_ok=True)
    return context_id, size, files


def record_context(context_id: str, size: int, files: set[str], *, session: Session) -> orm.Context:
    row = session.get(orm.Context, context_id)
    if row is None:
        row = orm.Context(id=context_id, size=size, files=sorted(files))
        session.add(row)
    return row


def list_archive(path: Path) -> set[str]:
    """The regular files of a context archive; refuses members that would escape it."""
    try:
        with tarfile.open(path, "r:gz") as tar:
            files = set()
            for member in tar.getmembers():
                name = member.name
                if name.startswith("/") or ".." in Path(name).parts:
                    raise InvalidRequest(f"context archive member {name!r} points outside it")
                if member.isfile():
                    files.add(str(Path(name)))
            return files
    except (tarfile.TarError, OSError, EOFError) as exc:
        raise InvalidRequest(f"the context is not a gzip'd tar archive: {exc}") from exc


def get_context(context_id: str, *, session: Session) -> orm.Context:
    row = session.get(orm.Context, context_id)
    if row is None:
        raise NotFound(f"context {context_id} does not exist; upload it first")
    return row


def unpack_context(home: Path, context_id: str, dest: Path) -> None:
    dest.mkdir(parents=True, exist_ok=True)
    with tarfile.open(context_path(home, context_id), "r:gz") as tar:
        tar.extractall(dest, filter="data")
