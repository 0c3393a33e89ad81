"""A trial's code travelling to a Ray node: the master's working dir as tar.gz bytes, unpacked
on the node (no shared file system needed for code)."""

from __future__ import annotations

import io
import os
import tarfile
from pathlib import Path


class CodeTooLarge(ValueError):
    pass


def pack(workdir: str, max_bytes: int, skip: tuple[str, ...] = ()) -> bytes:
    """The directory as tar.gz; ``skip``: paths inside it not to ship (the run's own log)."""
    root = Path(workdir)
    skipped = {os.path.realpath(p) for p in skip}
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:

        def keep(info: tarfile.TarInfo) -> tarfile.TarInfo | None:
            return None if os.path.realpath(root / info.name) in skipped else info

        if root.is_dir():
            for child in sorted(root.iterdir()):
                tar.add(child, arcname=child.name, filter=keep)
            if buf.tell() > max_bytes:
                raise CodeTooLarge(
                    f"the trial's code directory {workdir} is {buf.tell() / 1e6:.0f} MB "
                    f"packed, over the pool's max_code_mb ({max_bytes / 1e6:.0f} MB); keep "
                    "data out of the context directory or raise max_code_mb"
                )
    return buf.getvalue()


def unpack(data: bytes, target: str) -> None:
    """Unpack over ``target``: files the trial wrote in an earlier run stay."""
    os.makedirs(target, exist_ok=True)
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        tar.extractall(target, filter="tar")
