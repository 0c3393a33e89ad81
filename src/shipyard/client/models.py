"""The model registry: models, versions, aliases; a version's checkpoint downloaded, into a
directory or into the local cache of models (reused once complete)."""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from urllib.parse import quote

from shipyard.client.checkpoints import download_checkpoint
from shipyard.client.contexts import Progress
from shipyard.client.model_uri import ModelRef
from shipyard.client.session import Session
from shipyard.common.api_models import (
    ModelAliasInfo,
    ModelDeleted,
    ModelDetail,
    ModelSummary,
    ModelVersionDeleted,
    ModelVersionDetail,
    ModelVersionInfo,
)


def _path(name: str) -> str:
    return f"/models/{quote(name, safe='')}"


def _where(workspace: str | None) -> dict[str, Any]:
    return {"workspace": workspace}


def create_model(
    session: Session,
    name: str,
    *,
    workspace: str | None = None,
    description: str = "",
    tags: Sequence[str] = (),
) -> ModelDetail:
    body = {"name": name, "workspace": workspace, "description": description, "tags": list(tags)}
    return ModelDetail.model_validate(session.post("/models", json=body))


def list_models(
    session: Session, *, workspace: str | None = None, archived: bool | None = False
) -> list[ModelSummary]:
    """archived: False hides archived models, True shows only them, None shows all."""
    params = {"workspace": workspace, "archived": None if archived is None else str(archived)}
    return [ModelSummary.model_validate(m) for m in session.get("/models", params=params)]


def get_model(session: Session, name: str, *, workspace: str | None = None) -> ModelDetail:
    return ModelDetail.model_validate(session.get(_path(name), params=_where(workspace)))


def change_model(
    session: Session,
    name: str,
    *,
    workspace: str | None = None,
    description: str | None = None,
    tags: Sequence[str] | None = None,
    archived: bool | None = None,
) -> ModelDetail:
    """None leaves a field as it is; tags replace the model's."""
    body = {
        "description": description,
        "tags": None if tags is None else list(tags),
        "archived": archived,
    }
    path = _path(name) + _query(workspace)
    return ModelDetail.model_validate(
        session.patch(path, json={k: v for k, v in body.items() if v is not None})
    )


def delete_model(
    session: Session, name: str, *, workspace: str | None = None, force: bool = False
) -> ModelDeleted:
    """force: even though an alias names one of its versions (a Conflict otherwise)."""
    path = _path(name) + _query(workspace, force="true" if force else None)
    return ModelDeleted.model_validate(session.delete(path))


def register_version(
    session: Session,
    name: str,
    checkpoint_uuid: str,
    *,
    workspace: str | None = None,
    description: str = "",
    tags: Sequence[str] = (),
) -> ModelVersionInfo:
    body = {"checkpoint_uuid": checkpoint_uuid, "description": description, "tags": list(tags)}
    path = f"{_path(name)}/versions{_query(workspace)}"
    return ModelVersionInfo.model_validate(session.post(path, json=body))


def delete_version(
    session: Session, name: str, version: int, *, workspace: str | None = None, force: bool = False
) -> ModelVersionDeleted:
    """force: even though an alias names it (a Conflict otherwise)."""
    path = f"{_path(name)}/versions/{int(version)}"
    path += _query(workspace, force="true" if force else None)
    return ModelVersionDeleted.model_validate(session.delete(path))


def get_version(
    session: Session, name: str, version: int, *, workspace: str | None = None
) -> ModelVersionDetail:
    """The version with its lineage."""
    path = f"{_path(name)}/versions/{int(version)}"
    return ModelVersionDetail.model_validate(session.get(path, params=_where(workspace)))


def resolve(session: Session, ref: ModelRef) -> ModelVersionDetail:
    """The version a model reference names (an alias, a number, or the latest)."""
    params = {"ref": ref.ref, "workspace": ref.workspace}
    return ModelVersionDetail.model_validate(
        session.get(f"{_path(ref.name)}/resolve", params=params)
    )


def set_alias(
    session: Session, name: str, alias: str, version: int, *, workspace: str | None = None
) -> ModelAliasInfo:
    path = f"{_path(name)}/aliases/{quote(alias, safe='')}{_query(workspace)}"
    return ModelAliasInfo.model_validate(session.put(path, json={"version": version}))


def delete_alias(
    session: Session, name: str, alias: str, *, workspace: str | None = None
) -> ModelAliasInfo:
    path = f"{_path(name)}/aliases/{quote(alias, safe='')}{_query(workspace)}"
    return ModelAliasInfo.model_validate(session.delete(path))


def _query(workspace: str | None, **more: str | None) -> str:
    """A query string for the writes (the session's post, put and delete take none)."""
    fields = {"workspace": workspace, **more}
    parts = [f"{k}={quote(v, safe='')}" for k, v in fields.items() if v is not None]
    return "?" + "&".join(parts) if parts else ""


# -- files -----------------------------------------------------------------------------------


def cache_root() -> Path:
    """Where downloaded versions are kept: $XDG_CACHE_HOME/shipyard/models, by default
    ~/.cache/shipyard/models."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "shipyard" / "models"


def cached_download(
    session: Session,
    version: ModelVersionInfo,
    root: Path | None = None,
    *,
    progress: Progress | None = None,
) -> Path:
    """The version's files in <root>/<workspace>/<name>/<version>/, downloaded unless they
    are there already, complete (a version never changes; a file beside the directory
    names the checkpoint, so a model deleted and made again is downloaded again). The
    directory appears whole: the files are unpacked beside it, then moved in."""
    parent = (root or cache_root()) / _component(version.workspace) / version.model
    target = parent / str(version.version)
    marker = parent / f"{version.version}.checkpoint"
    if _complete(target, marker, version.checkpoint_uuid):
        return target
    parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=parent, prefix=f".{version.version}-") as scratch:
        files = Path(scratch, "files")
        download_checkpoint(session, version.checkpoint_uuid, files, progress=progress)
        if _complete(target, marker, version.checkpoint_uuid):
            return target  # another process finished first
        marker.unlink(missing_ok=True)
        if target.exists():  # an unfinished copy, or another checkpoint's
            shutil.rmtree(target)
        os.replace(files, target)
        with tempfile.NamedTemporaryFile("w", dir=parent, delete=False) as note:
            note.write(version.checkpoint_uuid)
        os.replace(note.name, marker)
    return target


def _complete(target: Path, marker: Path, uuid: str) -> bool:
    with contextlib.suppress(OSError):
        return target.is_dir() and marker.read_text() == uuid
    return False


def _component(name: str) -> str:
    """A workspace's name as one directory name (any character but "/" may be in it)."""
    safe = quote(name, safe=" _-.+=,@")
    return "%2E" + safe[1:] if safe.startswith(".") else safe
