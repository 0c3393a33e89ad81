"""The checkpoint layer: what makes files in a store a checkpoint, the same for every store.

A checkpoint is the files under ``<uuid>/`` and, put last and in one step,
``<uuid>/metadata.json``: it is a checkpoint only once that file exists, so a half-written
one is never listed nor offered for restore. While a trial writes one, a writing mark
``.writing/<uuid>.json`` (beside the checkpoints, not in them) says whose it is, so the
master can remove what a trial killed before registering it left behind.

Files are written where the store allows it: a store with a local directory (a shared file
system) is written and read in place, so a trial writes its files straight into the
checkpoint, with no copy. For any other store ``store_path`` gives a temporary staging
directory whose files ``finalize`` puts, and ``restore_path`` a temporary download.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from shipyard.common.errors import Conflict, InvalidRequest, NotFound
from shipyard.storage.store import Store

METADATA_FILE = "metadata.json"
WRITING_MARKS = ".writing"


def check_uuid(uuid: str) -> str:
    """A uuid becomes a key (a directory name), so it must be one plain path component, and
    not a hidden one: those are the layer's own (the writing marks)."""
    if not isinstance(uuid, str) or not uuid:
        raise InvalidRequest(f"checkpoint uuid must be a non-empty string, got {uuid!r}")
    if uuid.startswith(".") or "/" in uuid or "\\" in uuid or "\x00" in uuid:
        raise InvalidRequest(
            f"checkpoint uuid {uuid!r} must not contain path separators nor start with a dot"
        )
    return uuid


class CheckpointStorage:
    """Checkpoints in one store (storage_at builds the one an experiment config resolves to)."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._staging: dict[str, Path] = {}  # uuid -> staging directory, for a store without one
        # The last checkpoint this process wrote or downloaded, with its files' digests: a
        # file unchanged since then is copied inside the store, not sent again.
        self._previous: tuple[str, dict[str, str]] | None = None
        self.sent_bytes = 0  # what puts sent (copies inside the store send nothing)
        self._sent_lock = threading.Lock()

    def __str__(self) -> str:
        return str(self.store)

    def location(self, uuid: str) -> str:
        """Where checkpoint ``uuid`` is (or would be) stored, for messages: a path or a URL."""
        local = self.store.local_dir(check_uuid(uuid))
        return str(local) if local is not None else f"{self.store}/{uuid}"

    # Writing a checkpoint: store_path (or upload), then finalize.

    def store_path(self, uuid: str) -> Path:
        """Create the (empty) directory a new checkpoint is written into and return it."""
        if self.is_complete(uuid):
            raise Conflict(f"checkpoint {uuid} already exists in {self.store}")
        path = self._files_dir(uuid)
        if path is None:
            import tempfile  # only a store without a local directory stages

            path = Path(tempfile.mkdtemp(prefix=f"shipyard-checkpoint-{uuid}-"))
            self._staging[uuid] = path
        path.mkdir(parents=True, exist_ok=True)
        return path

    def upload(self, local_dir: str | Path, uuid: str) -> None:
        """Copy the files of ``local_dir`` into checkpoint ``uuid`` (not finalized yet)."""
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

    def finalize(
        self, uuid: str, metadata: dict[str, Any], *, steps_completed: int | None = None
    ) -> dict[str, int]:
        """Make the written files a checkpoint: put metadata.json last; return
        ``{relative path: size in bytes}`` of its files."""
        if self.is_complete(uuid):
            raise Conflict(self._has_manifest(uuid))
        path = self._files_dir(uuid)
        if path is None or not path.is_dir():
            raise NotFound(
                f"checkpoint directory {self.location(uuid)} does not exist: nothing to finalize"
            )
        resources = _list_files(path)
        if METADATA_FILE in resources:
            raise Conflict(self._has_manifest(uuid))
        if not isinstance(metadata, dict):
            raise TypeError(f"checkpoint metadata must be a dict, got {type(metadata).__name__}")
        if steps_completed is None:
            steps_completed = metadata.get("steps_completed", 0)
        document = {
            **metadata,
            "uuid": uuid,
            "steps_completed": steps_completed,
            "resources": resources,
        }
        try:
            text = json.dumps(document, indent=2, sort_keys=True)  # checked before any put
        except (TypeError, ValueError) as exc:
            raise TypeError(f"checkpoint metadata must be JSON-serializable: {exc}") from exc
        staged = self._staging.get(uuid)
        digests = self._put_staged(uuid, staged, resources) if staged is not None else None
        if digests is not None:
            text = json.dumps({**document, "digests": digests}, indent=2, sort_keys=True)
        self.store.put(f"{uuid}/{METADATA_FILE}", text.encode())
        if staged is not None:
            self._unstage(uuid)
            self._previous = (uuid, digests or {})
        return resources

    def _put_staged(self, uuid: str, staged: Path, resources: dict[str, int]) -> dict[str, str]:
        """Put the staged files, several at once, and return their digests. A file whose
        digest the previous checkpoint has is copied from it inside the store instead."""
        previous_uuid, previous = self._previous or ("", {})

        def put_one(name: str) -> tuple[str, str]:
            path = staged / name
            digest = _sha256(path)
            if self.store.copies_inside and previous.get(name) == digest:
                try:
                    self.store.copy(f"{previous_uuid}/{name}", f"{uuid}/{name}")
                    return name, digest
                except FileNotFoundError:
                    pass  # retention removed the previous one meanwhile: send the bytes
            self.store.put(f"{uuid}/{name}", path)
            with self._sent_lock:
                self.sent_bytes += resources[name]
            return name, digest

        workers = max(1, min(self.store.parallel_puts, len(resources)))
        with ThreadPoolExecutor(workers, thread_name_prefix="checkpoint-put") as pool:
            return dict(sorted(pool.map(put_one, resources)))

    def shared_dir(self, uuid: str) -> Path:
        """The directory of checkpoint ``uuid`` that every rank writes its shard into
        (``store_path(shard=True)``): only a store with a local directory has one, since
        the rank that finalizes puts only its own staged files."""
        local = self.store.local_dir(check_uuid(uuid))
        if local is None:
            raise InvalidRequest(
                f"checkpoints in {self.store} cannot be written in shards: every rank must "
                "reach the checkpoint's directory (use shared_fs storage), or only the chief "
                "writes (store_path(shard=False))"
            )
        return local

    def _files_dir(self, uuid: str) -> Path | None:
        """Where the files of checkpoint ``uuid`` are written: the store's own directory,
        or the staging directory store_path made; None before that."""
        local = self.store.local_dir(check_uuid(uuid))
        return local if local is not None else self._staging.get(uuid)

    def _unstage(self, uuid: str) -> None:
        staged = self._staging.pop(uuid, None)
        if staged is not None:
            shutil.rmtree(staged, ignore_errors=True)

    def _has_manifest(self, uuid: str) -> str:
        return (
            f"checkpoint {uuid} in {self.store} already has a {METADATA_FILE}: it was "
            f"finalized already, or its files include one (Shipyard writes {METADATA_FILE}; "
            "save yours under another name)"
        )

    # Reading complete checkpoints.

    def is_complete(self, uuid: str) -> bool:
        """True when the checkpoint exists and its metadata.json has been written."""
        return self.store.exists(f"{check_uuid(uuid)}/{METADATA_FILE}")

    def list_complete(self) -> list[str]:
        """The uuids of every complete checkpoint, sorted."""
        manifest = f"/{METADATA_FILE}"
        return sorted(
            key.removesuffix(manifest)
            for key in self.store.list("")
            if key.endswith(manifest) and key.count("/") == 1 and not key.startswith(".")
        )

    def read_metadata(self, uuid: str) -> dict[str, Any]:
        """The content of a complete checkpoint's metadata.json; NotFound otherwise."""
        try:
            with self.store.get(f"{check_uuid(uuid)}/{METADATA_FILE}") as manifest:
                data: dict[str, Any] = json.load(manifest)
        except FileNotFoundError:
            raise self._not_found(uuid) from None
        return data

    @contextlib.contextmanager
    def restore_path(self, uuid: str) -> Iterator[Path]:
        """The directory of a complete checkpoint, for the ``with`` block (a temporary
        download for a store without a local directory); NotFound when missing or
        half-written."""
        self._require_complete(uuid)
        local = self.store.local_dir(uuid)
        if local is not None:
            yield local
            return
        import tempfile

        with tempfile.TemporaryDirectory(prefix=f"shipyard-restore-{uuid}-") as scratch:
            self.download(uuid, scratch)
            yield Path(scratch)

    def download(self, uuid: str, local_dir: str | Path) -> None:
        """Copy the files of complete checkpoint ``uuid`` (metadata.json too) into ``local_dir``."""
        self._require_complete(uuid)
        local = self.store.local_dir(uuid)
        if local is not None:
            shutil.copytree(local, Path(local_dir), dirs_exist_ok=True)
            return
        for key in self.store.list(uuid):
            target = Path(local_dir, key.removeprefix(f"{uuid}/"))
            target.parent.mkdir(parents=True, exist_ok=True)
            with self.store.get(key) as source, open(target, "wb") as out:
                shutil.copyfileobj(source, out)
        manifest = json.loads(Path(local_dir, METADATA_FILE).read_text())
        self._previous = (uuid, manifest.get("digests") or {})

    def _require_complete(self, uuid: str) -> None:
        if not self.is_complete(uuid):
            raise self._not_found(uuid)

    def _not_found(self, uuid: str) -> NotFound:
        return NotFound(f"checkpoint {uuid} not found in {self.store} (missing, or not finalized)")

    def links(self, uuid: str, expires_s: int) -> dict[str, tuple[int, str]] | None:
        """``{relative path: (size, URL)}``: URLs that read the files of complete checkpoint
        ``uuid`` (metadata.json too) with a plain GET for ``expires_s`` seconds; None when
        the store gives no such URLs."""
        self._require_complete(uuid)
        found: dict[str, tuple[int, str]] = {}
        for key, size in self.store.list(uuid).items():
            url = self.store.presigned_url(key, expires_s)
            if url is None:
                return None
            found[key.removeprefix(f"{uuid}/")] = (size, url)
        return found

    # Removing.

    def delete(self, uuid: str) -> None:
        """Remove a checkpoint (complete or not) and its writing mark; deleting a missing
        one does nothing."""
        # The manifest goes first, so a delete cut short leaves a non-checkpoint, not a broken one.
        self.store.delete(f"{check_uuid(uuid)}/{METADATA_FILE}")
        self.store.delete(uuid)
        self._unstage(uuid)
        self.clear_writing(uuid)

    # Writing marks.

    def mark_writing(self, uuid: str, owner: dict[str, Any]) -> None:
        """Note who writes checkpoint ``uuid`` until the master has it: a trial killed
        before then leaves files no checkpoint row owns, and this mark lets the master find
        and remove them."""
        self.store.put(self._mark(uuid), json.dumps(owner).encode(), durable=False)

    def clear_writing(self, uuid: str) -> None:
        """The checkpoint is registered (or gone): forget its writing mark."""
        self.store.delete(self._mark(uuid))

    def writing(self) -> dict[str, dict[str, Any]]:
        """uuid -> owner of every checkpoint with a writing mark."""
        found = {}
        for key in self.store.list(WRITING_MARKS):
            name = key.removeprefix(f"{WRITING_MARKS}/")
            if "/" in name or name.startswith(".") or not name.endswith(".json"):
                continue  # not a mark (e.g. a mark being put)
            try:
                with self.store.get(key) as mark:
                    found[name.removesuffix(".json")] = json.load(mark)
            except (OSError, ValueError):
                continue  # gone or damaged: the next pass looks again
        return found

    def _mark(self, uuid: str) -> str:
        return f"{WRITING_MARKS}/{check_uuid(uuid)}.json"


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as source:
        while chunk := source.read(1 << 20):
            digest.update(chunk)  # releases the GIL: files hash while others upload
    return digest.hexdigest()


def _list_files(root: Path) -> dict[str, int]:
    resources: dict[str, int] = {}
    for dirpath, _dirnames, filenames in os.walk(root):
        for name in filenames:
            full = Path(dirpath) / name
            resources[full.relative_to(root).as_posix()] = full.stat().st_size
    return dict(sorted(resources.items()))
