"""Checkpoints in a directory of a file system every trial can reach (shared_fs, directory)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

from shipyard.common.errors import Conflict, InvalidRequest, NotFound
from shipyard.common.files import write_atomically
from shipyard.storage.base import METADATA_FILE, CheckpointStorage, check_uuid

WRITING_DIR = ".writing"


class SharedFSStorage(CheckpointStorage):
    """``<base_path>/<uuid>/<files>`` plus ``<base_path>/<uuid>/metadata.json``, written last."""

    def __init__(self, base_path: str | Path) -> None:
        self.base_path = Path(base_path)

    def __repr__(self) -> str:
        return f"SharedFSStorage({str(self.base_path)!r})"

    def _dir(self, uuid: str) -> Path:
        return self.base_path / check_uuid(uuid)

    def location(self, uuid: str) -> str:
        return str(self._dir(uuid))

    def store_path(self, uuid: str) -> Path:
        path = self._dir(uuid)
        if self.is_complete(uuid):
            raise Conflict(f"checkpoint {uuid} already exists in {self.base_path}")
        path.mkdir(parents=True, exist_ok=True)
        return path

    def finalize(
        self, uuid: str, metadata: dict[str, Any], *, steps_completed: int | None = None
    ) -> dict[str, int]:
        path = self._dir(uuid)
        if not path.is_dir():
            raise NotFound(f"checkpoint directory {path} does not exist: nothing to finalize")
        if self.is_complete(uuid):
            raise Conflict(
                f"checkpoint {uuid} in {self.base_path} already has a {METADATA_FILE}: it was "
                f"finalized already, or its files include one (Shipyard writes {METADATA_FILE}; "
                "save yours under another name)"
            )
        if not isinstance(metadata, dict):
            raise TypeError(f"checkpoint metadata must be a dict, got {type(metadata).__name__}")
        if steps_completed is None:
            steps_completed = metadata.get("steps_completed", 0)
        resources = _list_files(path)
        document = {
            **metadata,
            "uuid": uuid,
            "steps_completed": steps_completed,
            "resources": resources,
        }
        try:
            text = json.dumps(document, indent=2, sort_keys=True)
        except (TypeError, ValueError) as exc:
            raise TypeError(f"checkpoint metadata must be JSON-serializable: {exc}") from exc
        write_atomically(path / METADATA_FILE, text, durable=True)
        return resources

    def is_complete(self, uuid: str) -> bool:
        return (self._dir(uuid) / METADATA_FILE).is_file()

    def restore_path(self, uuid: str) -> Path:
        if not self.is_complete(uuid):
            raise NotFound(
                f"checkpoint {uuid} not found in {self.base_path} (missing, or not finalized)"
            )
        return self._dir(uuid)

    def read_metadata(self, uuid: str) -> dict[str, Any]:
        path = self.restore_path(uuid) / METADATA_FILE
        data: dict[str, Any] = json.loads(path.read_text())
        return data

    def delete(self, uuid: str) -> None:
        path = self._dir(uuid)
        # The manifest goes first, so a delete cut short leaves a non-checkpoint, not a broken one.
        (path / METADATA_FILE).unlink(missing_ok=True)
        shutil.rmtree(path, ignore_errors=True)
        self.clear_writing(uuid)

    # Writing marks: <base_path>/.writing/<uuid>.json, beside the checkpoints, not in them.

    def _mark(self, uuid: str) -> Path:
        return self.base_path / WRITING_DIR / f"{check_uuid(uuid)}.json"

    def mark_writing(self, uuid: str, owner: dict[str, Any]) -> None:
        mark = self._mark(uuid)
        mark.parent.mkdir(parents=True, exist_ok=True)
        mark.write_text(json.dumps(owner))

    def clear_writing(self, uuid: str) -> None:
        self._mark(uuid).unlink(missing_ok=True)

    def writing(self) -> dict[str, dict[str, Any]]:
        marks = self.base_path / WRITING_DIR
        if not marks.is_dir():
            return {}
        found = {}
        for mark in marks.glob("*.json"):
            try:
                found[mark.stem] = json.loads(mark.read_text())
            except (OSError, ValueError):
                continue  # being written right now, or damaged: the next pass looks again
        return found

    def list_complete(self) -> list[str]:
        if not self.base_path.is_dir():
            return []
        return sorted(
            entry.name
            for entry in self.base_path.iterdir()
            if entry.is_dir() and (entry / METADATA_FILE).is_file()
        )

    def upload(self, local_dir: str | Path, uuid: str) -> None:
        source = Path(local_dir)
        if not source.is_dir():
            raise InvalidRequest(f"cannot upload {source}: not a directory")
        # A downloaded checkpoint carries its old manifest; the new one is written by finalize.
        shutil.copytree(
            source,
            self.store_path(uuid),
            dirs_exist_ok=True,
            ignore=lambda d, names: [METADATA_FILE] if Path(d) == source else [],
        )

    def download(self, uuid: str, local_dir: str | Path) -> None:
        shutil.copytree(self.restore_path(uuid), Path(local_dir), dirs_exist_ok=True)


def _list_files(root: Path) -> dict[str, int]:
    resources: dict[str, int] = {}
    for dirpath, _dirnames, filenames in os.walk(root):
        for name in filenames:
            full = Path(dirpath) / name
            resources[full.relative_to(root).as_posix()] = full.stat().st_size
    return dict(sorted(resources.items()))
