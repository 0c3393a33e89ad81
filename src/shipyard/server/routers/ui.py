"""The web UI: one page (index.html) for every UI path, and its static files.

The front-end routes on location.pathname, so each path a person may bookmark or reload
answers with the same page. Not part of the API: no route is in the OpenAPI schema.
"""

from __future__ import annotations

import hashlib
import mimetypes
import stat
from pathlib import Path
from typing import NamedTuple

from fastapi import APIRouter, FastAPI
from fastapi.responses import FileResponse
from starlette.datastructures import Headers
from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send

from shipyard.common.errors import NotFound

# Beside the server package, as installed (pyproject's package data) or in a checkout.
WEB = Path(__file__).resolve().parent.parent / "web"
INDEX = WEB / "index.html"
STATIC = WEB / "static"

router = APIRouter(include_in_schema=False)


# Revalidated on every load (ETag, answered 304 while unchanged): the file names carry no
# version, so a cached script could outlive an upgrade of the master.
NO_CACHE = {"Cache-Control": "no-cache"}


def install(app: FastAPI) -> None:
    app.include_router(router)
    app.add_middleware(StaticFromMemory)


class _Kept(NamedTuple):
    version: tuple[int, int]  # the file's (mtime_ns, size) when it was read
    body: bytes
    etag: str
    media_type: str


class StaticFromMemory:
    """GET and HEAD /static/<file>: the page's ~40 files answered from memory, read again
    when one changes, before FastAPI's routing, which walks the API's routes first (about
    2 ms a request here). Starlette's StaticFiles, a mounted route, took about 4 ms a file
    (the routing, and thread hops to stat, open and read), and the page waits for all of
    them before its first API request. A file not there (or a master without the front-end)
    goes on to the routing and its 404."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.root = STATIC.resolve()
        self.kept: dict[Path, _Kept] = {}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope["path"] if scope["type"] == "http" else ""
        kept = None
        if path.startswith("/static/") and scope["method"] in ("GET", "HEAD"):
            kept = self._file(path.removeprefix("/static/"))
        if kept is None:
            await self.app(scope, receive, send)
            return
        headers = {**NO_CACHE, "ETag": kept.etag}
        if kept.etag in Headers(scope=scope).get("if-none-match", ""):
            response = Response(status_code=304, headers=headers)
        else:
            body = kept.body if scope["method"] == "GET" else b""
            response = Response(body, media_type=kept.media_type, headers=headers)
            response.headers["content-length"] = str(len(kept.body))
        await response(scope, receive, send)

    def _file(self, relative: str) -> _Kept | None:
        file = (self.root / relative).resolve()
        if not file.is_relative_to(self.root):
            return None
        try:
            found = file.stat()
        except OSError:
            return None
        if not stat.S_ISREG(found.st_mode):
            return None
        version = (found.st_mtime_ns, found.st_size)
        kept = self.kept.get(file)
        if kept is None or kept.version != version:
            body = file.read_bytes()
            media_type = mimetypes.guess_type(file.name)[0] or "application/octet-stream"
            etag = f'"{hashlib.sha256(body).hexdigest()[:32]}"'
            kept = self.kept[file] = _Kept(version, body, etag, media_type)
        return kept


def page() -> FileResponse:
    if not INDEX.is_file():
        raise NotFound(f"the web UI is not installed ({INDEX} is missing)")
    return FileResponse(INDEX, media_type="text/html", headers=NO_CACHE)


# Ids are ints ({...:int}): any other path segment is a 404 like every unknown path.
@router.get("/")
def home() -> FileResponse:
    return page()


@router.get("/experiments/{exp_id:int}")
def experiment_page(exp_id: int) -> FileResponse:
    return page()


@router.get("/trials/{trial_id:int}")
def trial_page(trial_id: int) -> FileResponse:
    return page()


@router.get("/cluster")
def cluster_page() -> FileResponse:
    return page()


@router.get("/models")
def models_page() -> FileResponse:
    return page()


@router.get("/models/{name}")
def model_page(name: str) -> FileResponse:
    return page()
