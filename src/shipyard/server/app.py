"""The FastAPI application factory: settings in, a running master out."""

from __future__ import annotations

import asyncio
import gc
import logging
from contextlib import asynccontextmanager

from fastapi import Depends, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

import shipyard
from shipyard.backends.pooled import LOCAL
from shipyard.common.api import ErrorResponse
from shipyard.common.errors import InvalidRequest, ShipyardError, Unauthorized
from shipyard.server.auth import bootstrap
from shipyard.server.auth.principal import current_user
from shipyard.server.auth.tokens import TaskTokens
from shipyard.server.db import Database
from shipyard.server.orm import utcnow
from shipyard.server.pools import (
    MasterConfig,
    load_master_config,
    make_backends,
    on_the_masters_machine,
    partition,
)
from shipyard.server.routers import (
    artifacts,
    audit,
    auth,
    checkpoints,
    contexts,
    experiments,
    groups,
    health,
    jobs,
    master,
    models,
    roles,
    run_records,
    searcher,
    secrets,
    tokens,
    trial_side,
    trials,
    ui,
    users,
    workspaces,
)
from shipyard.server.services.signals import SignalHub
from shipyard.server.settings import Settings
from shipyard.server.state import MasterState
from shipyard.server.workers.curve_keeper import CurveKeeper
from shipyard.server.workers.orchestrator import Orchestrator

log = logging.getLogger(__name__)


# What the schema says of every API route's errors: a 4xx with the body the handlers below
# write (an invalid request is a 400 there, not FastAPI's own 422 body, which this replaces).
ERRORS: dict[int | str, dict] = {
    "4XX": {"model": ErrorResponse, "description": "the request was refused: see error.message"}
}


def create_app(settings: Settings | None = None) -> FastAPI:
    settings = settings or Settings()
    master_config = (
        load_master_config(settings.config_file) if settings.config_file else MasterConfig()
    )
    backend = make_backends(master_config, settings.slots)
    engines = {
        p.pool_name: backend.capacity_of(p.pool_name)
        for p in master_config.resource_pools
        if not on_the_masters_machine(p)  # those share the machine's slots (LOCAL)
    }
    pools = partition(backend.capacity_of(LOCAL), master_config, engines)

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        settings.ensure_dirs()
        db = Database(settings.database_url)
        db.migrate()
        if settings.auth:
            bootstrap.first_admin(settings, db)
            bootstrap.local_token(settings, db)
        hub = SignalHub()
        hub.attach(asyncio.get_running_loop())
        task_tokens = TaskTokens.of_home(settings.home)
        orchestrator = Orchestrator(
            settings, db, backend, hub, pools, task_tokens if settings.auth else None
        )
        app.state.master = MasterState(
            settings=settings,
            db=db,
            backend=backend,
            hub=hub,
            orchestrator=orchestrator,
            pools=pools,
            default_pool=master_config.default_pool,
            started_at=utcnow(),
            task_tokens=task_tokens,
        )
        orchestrator.start()
        curve_keeper = CurveKeeper(db)
        curve_keeper.start()
        _freeze_startup_objects()
        try:
            yield
        finally:
            curve_keeper.stop()
            orchestrator.stop()
            db.close()

    app = FastAPI(
        title="Shipyard",
        version=shipyard.__version__,
        description="REST API of the Shipyard master",
        lifespan=lifespan,
    )
    # Open: the health probe, logging in and out. Trials' routes check their task token.
    for module in (health, auth, trial_side):
        app.include_router(module.router, prefix="/api/v1", responses=ERRORS)
    app.include_router(artifacts.trial_router, prefix="/api/v1", responses=ERRORS)
    # Everything else needs a user (auth.py's whoami and tickets ask on their own).
    signed_in = [Depends(current_user)]
    for module in (
        master,
        contexts,
        experiments,
        jobs,
        trials,
        run_records,
        artifacts,
        checkpoints,
        models,
        searcher,
        workspaces,
        groups,
        roles,
        secrets,
    ):
        app.include_router(
            module.router, prefix="/api/v1", dependencies=signed_in, responses=ERRORS
        )
    for module in (users, tokens, audit):
        app.include_router(module.router, prefix="/api/v1", responses=ERRORS)
    app.include_router(auth.pages)
    ui.install(app)
    _install_error_handlers(app)
    return app


def _freeze_startup_objects() -> None:
    """Leave what the master has built so far (modules, schemas, the ORM's mappers: never
    garbage) out of the garbage collector's full collections. Each walked all of it, 80 to
    95 ms, about once in ten GET /experiments/{id} of 1,000 trials, and made its p95 (see
    docs/ui.md, "At scale"); a full collection now takes a few ms."""
    gc.collect()
    gc.freeze()


def _install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(ShipyardError)
    async def shipyard_error(_request: Request, exc: ShipyardError) -> JSONResponse:
        headers = {"WWW-Authenticate": "Bearer"} if isinstance(exc, Unauthorized) else None
        return JSONResponse(exc.to_dict(), status_code=exc.status_code, headers=headers)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        # Unknown paths and methods: the same error shape as every other answer.
        error = ShipyardError(f"{request.method} {request.url.path}: {exc.detail}")
        error.kind = "NotFound" if exc.status_code == 404 else "InvalidRequest"
        return JSONResponse(error.to_dict(), status_code=exc.status_code)

    @app.exception_handler(RequestValidationError)
    async def bad_request(_request: Request, exc: RequestValidationError) -> JSONResponse:
        details = [
            {"path": ".".join(str(p) for p in err["loc"]), "message": err["msg"]}
            for err in exc.errors()
        ]
        error = InvalidRequest("the request is not valid", details)
        return JSONResponse(error.to_dict(), status_code=400)

    @app.exception_handler(OverflowError)
    async def out_of_range(_request: Request, exc: OverflowError) -> JSONResponse:
        # A number too large for the database (an id, a step): the caller's mistake.
        error = InvalidRequest(f"a number in the request is out of range ({exc})")
        return JSONResponse(error.to_dict(), status_code=400)

    @app.exception_handler(Exception)
    async def internal_error(_request: Request, exc: Exception) -> JSONResponse:
        log.exception("unhandled error", exc_info=exc)
        error = ShipyardError(
            f"internal error in the master ({type(exc).__name__}); see master.log"
        )
        return JSONResponse(error.to_dict(), status_code=500)
