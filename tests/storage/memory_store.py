"""A store that keeps its files in a dict: for the tests only. It has the five operations
and no local directory, so the checkpoint layer's tests run against it prove that a second
store (S3, say) needs nothing else: the rules are the layer's."""

from __future__ import annotations

import io
from pathlib import Path
from typing import BinaryIO

from shipyard.storage import Store


class MemoryStore(Store):
    def __init__(self) -> None:
        self.files: dict[str, bytes] = {}

    def __str__(self) -> str:
        return "memory://checkpoints"

    def put(self, key: str, source: bytes | Path, *, durable: bool = True) -> None:
        self.files[key] = source if isinstance(source, bytes) else Path(source).read_bytes()

    def get(self, key: str) -> BinaryIO:
        if key not in self.files:
            raise FileNotFoundError(key)
        return io.BytesIO(self.files[key])

    def list(self, prefix: str) -> dict[str, int]:
        under = f"{prefix}/" if prefix else ""
        return {k: len(v) for k, v in sorted(self.files.items()) if k.startswith(under)}

    def delete(self, prefix: str) -> None:
        for key in [k for k in self.files if k == prefix or k.startswith(f"{prefix}/")]:
            del self.files[key]

    def exists(self, key: str) -> bool:
        return key in self.files
