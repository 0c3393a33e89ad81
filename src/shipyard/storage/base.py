"""The checkpoint storage interface shared by every storage type.

A checkpoint is a directory of files named by a uuid. It becomes a checkpoint only when its
``metadata.json`` is written, last and atomically: a half-written checkpoint is never offered.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from pathlib import Path
from typing import Any

from shipyard.common.errors import InvalidRequest

METADATA_FILE = "metadata.json"


def check_uuid(uuid: str) -> str:
    """A uuid becomes a directory name, so it must be one plain path component."""
    if not isinstance(uuid, str) or not uuid:
        raise InvalidRequest(f"checkpoint uuid must be a non-empty string, got {uuid!r}")
    if uuid in (".", "..") or "/" in uuid or "\\" in uuid or "\x00" in uuid:
        raise InvalidRequest(f"checkpoint uuid {uuid!r} must not contain path separators")
    return uuid


class CheckpointStorage(ABC):
    """Where checkpoints live. Implementations: SharedFSStorage (shared_fs / directory)."""

    @abstractmethod
    def location(self, uuid: str) -> str:
        """Where checkpoint ``uuid`` is (or would be) stored, for messages: a path or a URL."""

    @abstractmethod
    def store_path(self, uuid: str) -> Path:
        """Create the (empty) directory a new checkpoint is written into and return it."""

    @abstractmethod
    def finalize(
        self, uuid: str, metadata: dict[str, Any], *, steps_completed: int | None = None
    ) -> dict[str, int]:
        """Make the written files a checkpoint: write metadata.json last; return
        ``{relative path: size in bytes}`` of its files."""

    @abstractmethod
    def is_complete(self, uuid: str) -> bool:
        """True when the checkpoint exists and its metadata.json has been written."""

    @abstractmethod
    def restore_path(self, uuid: str) -> Path:
        """The directory of a complete checkpoint; NotFound when missing or half-written."""

    @abstractmethod
    def read_metadata(self, uuid: str) -> dict[str, Any]:
        """The content of a complete checkpoint's metadata.json; NotFound otherwise."""

    @abstractmethod
    def delete(self, uuid: str) -> None:
        """Remove a checkpoint (complete or not) and its writing mark; deleting a missing
        one does nothing."""

    @abstractmethod
    def mark_writing(self, uuid: str, owner: dict[str, Any]) -> None:
        """Note who writes checkpoint ``uuid`` until the master has it: a trial killed
        before then leaves a directory no checkpoint row owns, and this mark lets the
        master find and remove it."""

    @abstractmethod
    def clear_writing(self, uuid: str) -> None:
        """The checkpoint is registered (or gone): forget its writing mark."""

    @abstractmethod
    def writing(self) -> dict[str, dict[str, Any]]:
        """uuid -> owner of every checkpoint with a writing mark."""

    @abstractmethod
    def list_complete(self) -> list[str]:
        """The uuids of every complete checkpoint, sorted."""

    @abstractmethod
    def upload(self, local_dir: str | Path, uuid: str) -> None:
        """Copy the files of ``local_dir`` into checkpoint ``uuid`` (not finalized yet)."""

    @abstractmethod
    def download(self, uuid: str, local_dir: str | Path) -> None:
        """Copy the files of complete checkpoint ``uuid`` (metadata.json too) into ``local_dir``."""
