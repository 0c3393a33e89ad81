"""The store: the few operations a place that holds checkpoint files must offer.

Keys are ``/``-separated relative paths (``<uuid>/model.bin``, ``.writing/<uuid>.json``);
a prefix names a "directory": every key under ``<prefix>/``. The operations are those of an
object store (S3: put_object, get_object, list_objects_v2, delete_objects, head_object), so
any such store fits; the rules that make files a checkpoint live one level up, in
storage/checkpoints.py, and no store repeats them.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from pathlib import Path
from typing import BinaryIO


class Store(ABC):
    """Where checkpoint files are kept. ``str(store)`` says where, for messages."""

    # How many files the checkpoint layer puts at once (an object store gains from several
    # requests in flight; a local disk does not).
    parallel_puts = 1
    # True when copy() runs inside the store, sending no bytes: the layer then copies a file
    # unchanged since the previous checkpoint instead of putting it again.
    copies_inside = False

    @abstractmethod
    def put(self, key: str, source: bytes | Path, *, durable: bool = True) -> None:
        """Store one file (the bytes, or a local file's content). A reader sees the whole
        file or none of it. ``durable``: kept once this returns, even if the machine then
        fails; False for a file whose loss costs nothing but a leftover (a writing mark),
        which a file system then writes faster. An object store is durable either way."""

    @abstractmethod
    def get(self, key: str) -> BinaryIO:
        """One file's content as a stream the caller closes; FileNotFoundError when the key
        does not exist."""

    @abstractmethod
    def list(self, prefix: str) -> dict[str, int]:
        """``{key: size in bytes}`` of every file under ``prefix/`` (every file when
        ``prefix`` is empty), sorted by key; empty when there are none."""

    @abstractmethod
    def delete(self, prefix: str) -> None:
        """Remove the file ``prefix`` and every file under ``prefix/``; nothing there is fine."""

    @abstractmethod
    def exists(self, key: str) -> bool:
        """True when the file ``key`` exists."""

    def copy(self, source_key: str, key: str) -> None:
        """Store at ``key`` the content of ``source_key``; FileNotFoundError when it is gone."""
        with self.get(source_key) as source:
            self.put(key, source.read())

    def presigned_url(self, key: str, expires_s: int) -> str | None:
        """A URL that reads ``key`` with a plain GET, without credentials, for
        ``expires_s`` seconds; None for a store that has no such URLs."""
        return None

    def local_dir(self, prefix: str) -> Path | None:
        """A directory of this machine that *is* ``prefix`` (files written there are in the
        store), or None. A store that has one (a shared file system) lets a trial write and
        read its checkpoint files in place, with no copy; the checkpoint layer stages the
        files of any other store in a temporary directory and puts them."""
        return None
