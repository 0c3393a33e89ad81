"""The web UI: one page (index.html) for every UI path, and its static files.

The front-end routes on location.pathname, so each path a person may bookmark or reload
answers with the same page. Not part of the API: no route is in the OpenAPI schema.
"""

from __future__ import annotations

from pathlib import Path

from fastapi import APIRouter, FastAPI
from fastapi.responses import FileResponse
from starlette.responses import Response
from starlette.staticfiles import StaticFiles
from starlette.types import Scope

from shipyard.common.errors import NotFound

# Beside the server package, as installed (pyproject's package data) or in a checkout.
WEB = Path(__file__).resolve().parent.parent / "web"
INDEX = WEB / "index.html"
STATIC = WEB / "static"

router = APIRouter(include_in_schema=False)


# Revalidated on every load (ETag, answered 304 while unchanged): the file names carry no
# version, so a cached script could outlive an upgrade of the master.
NO_CACHE = {"Cache-Control": "no-cache"}


class _Static(StaticFiles):
    async def get_response(self, path: str, scope: Scope) -> Response:
        response = await super().get_response(path, scope)
        response.headers.update(NO_CACHE)
        return response


def install(app: FastAPI) -> None:
    app.include_router(router)
    # check_dir=False: a master without the front-end still starts (its /static is 404).
    app.mount("/static", _Static(directory=STATIC, check_dir=False), name="static")


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
