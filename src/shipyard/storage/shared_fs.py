"""A store in a directory of a file system every trial can reach (shared_fs, directory):
key ``a/b`` is the file ``<base_path>/a/b``."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import BinaryIO

from shipyard.storage.store import Store


class SharedFSStore(Store):
    def __init__(self, base_path: str | Path) -> None:
        self.base_path = Path(base_path)

    def __str__(self) -> str:
        return str(self.base_path)

    def __repr__(self) -> str:
        return f"SharedFSStore({str(self.base_path)!r})"

    def put(self, key: str, source: bytes | Path, *, durable: bool = True) -> None:
        # Written beside the target under a hidden name and renamed over it: one step.
        target = self.base_path / key
        temporary = target.with_name(f".{target.name}.{os.getpid()}.tmp")
        try:
            try:
                _write(temporary, source, durable)
            except FileNotFoundError:  # the first file of its directory
                target.parent.mkdir(parents=True, exist_ok=True)
                _write(temporary, source, durable)
            os.replace(temporary, target)
        except BaseException:
            temporary.unlink(missing_ok=True)
            raise

    def get(self, key: str) -> BinaryIO:
        return open(self.base_path / key, "rb")

    def list(self, prefix: str) -> dict[str, int]:
        root = self.base_path / prefix if prefix else self.base_path
        found: dict[str, int] = {}
        for dirpath, _dirnames, filenames in os.walk(root):
            for name in filenames:
                full = Path(dirpath) / name
                found[full.relative_to(self.base_path).as_posix()] = full.stat().st_size
        return dict(sorted(found.items()))

    def delete(self, prefix: str) -> None:
        if not prefix:
            raise ValueError("refusing to delete the whole store")
        path = self.base_path / prefix
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink(missing_ok=True)

    def exists(self, key: str) -> bool:
        return (self.base_path / key).is_file()

    def local_dir(self, prefix: str) -> Path:
        return self.base_path / prefix


def _write(path: Path, source: bytes | Path, durable: bool) -> None:
    if isinstance(source, bytes):
        with open(path, "wb") as out:
            out.write(source)
            if durable:
                out.flush()
                os.fsync(out.fileno())
        return
    shutil.copyfile(source, path)
    if durable:
        with open(path, "rb") as written:
            os.fsync(written.fileno())
