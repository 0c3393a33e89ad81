"""Calls a running trial makes (shipyard.core): plain JSON, small and fast. Each takes the
trial's task token (see auth/principal.trial_task), and a report names the token's run."""

from __future__ import annotations

import functools
from typing import Any

from fastapi import APIRouter, Body, Depends, Query
from fastapi.responses import FileResponse
from starlette.concurrency import run_in_threadpool

from shipyard.common import api
from shipyard.common.errors import Conflict, InvalidRequest, NotFound
from shipyard.server.auth.principal import TaskGrant, trial_task
from shipyard.server.services import (
    checkpoint_storage,
    logs,
    metrics,
    run_records,
    searching,
    trial_reports,
    trials,
)
from shipyard.server.services.contexts import context_path
from shipyard.server.state import MasterState, master
from shipyard.server.workers.orchestrator import Reason

router = APIRouter(tags=["trial-side"])


@router.post("/trials/{trial_id}/metrics", operation_id="report_trial_metrics")
def report_trial_metrics(
    trial_id: int,
    body: dict[str, Any] = Body(...),
    grant: TaskGrant = Depends(trial_task),
    m: MasterState = Depends(master),
) -> dict:
    """Store metrics of any group, as "reports" or as "columns" (services/metrics.Batch);
    a resent step replaces its value."""
    with m.metric_keys.transaction(), m.db.write() as s:
        trial = metrics.reporting_trial(trial_id, session=s)
        run_id = trial_reports.current_run(trial, grant.run(body.get("run_id")))
        batch = metrics.ingest(trial, run_id, body, keys=m.metric_keys, session=s)
        options = m.searcher_options(trial.experiment_id, session=s)
        for v in batch.validations:
            # Every validation: one without the searcher metric or time_metric is a
            # decision too (the worst value; a stop with the reason).
            searching.record_validation(
                trial, options, v["metrics"], v["steps_completed"], session=s
            )
    if batch.validations:
        m.orchestrator.wake(Reason.EVENT)
    return {"stored": batch.reports}


@router.post("/trials/{trial_id}/checkpoints", operation_id="report_checkpoint")
def report_checkpoint(
    trial_id: int,
    body: dict[str, Any] = Body(...),
    grant: TaskGrant = Depends(trial_task),
    m: MasterState = Depends(master),
) -> dict:
    """Record a checkpoint whose files (and metadata.json, last) are already written."""
    with m.db.write() as s:
        uuid = trial_reports.checkpoint(trial_id, grant.run(body.get("run_id")), body, session=s)
    return {"uuid": uuid}


@router.delete("/trials/{trial_id}/checkpoints/{uuid}", operation_id="delete_trial_checkpoint")
def delete_trial_checkpoint(
    trial_id: int,
    uuid: str,
    run_id: int = Query(..., description="The run asking: the trial's current one."),
    grant: TaskGrant = Depends(trial_task),
    m: MasterState = Depends(master),
) -> dict:
    """Delete a checkpoint of the trial's experiment (Determined's checkpoint.delete): it
    is marked DELETED, then its files go (if the storage fails, it is kept: 409). 409 for
    one a trial that may still run resumes from, or from a run that is not the trial's
    current one; 404 for one of another experiment or already deleted. Audited in the
    name of the experiment's owner."""
    trial_reports.delete_checkpoint(m.db, trial_id, grant.run(run_id), uuid)
    return {"uuid": uuid}


@router.post("/trials/{trial_id}/searcher/wait", operation_id="wait_for_searcher")
def wait_for_searcher(
    trial_id: int,
    body: dict[str, Any] = Body(...),
    grant: TaskGrant = Depends(trial_task),
    m: MasterState = Depends(master),
) -> dict:
    """The trial reached its target and found no new one: it asks to wait without holding
    a slot. If a new target came meanwhile, the answer says so and the trial goes on."""
    with m.db.write() as s:
        parked = trial_reports.park(trial_id, grant.run(body.get("run_id")), session=s)
    return parked._asdict()


@router.post("/trials/{trial_id}/progress", operation_id="report_trial_progress")
def report_trial_progress(
    trial_id: int,
    body: dict[str, Any] = Body(...),
    _grant: TaskGrant = Depends(trial_task),
    m: MasterState = Depends(master),
) -> dict:
    progress = body.get("progress")
    if not isinstance(progress, int | float) or not 0 <= progress <= 1:
        raise InvalidRequest(f"progress must be a number from 0 to 1, got {progress!r}")
    with m.db.write() as s:
        trial_reports.progress(trial_id, float(progress), session=s)
    return {}


@router.post("/trials/{trial_id}/environment", operation_id="report_run_environment")
def report_run_environment(
    trial_id: int,
    body: dict[str, Any] = Body(...),
    grant: TaskGrant = Depends(trial_task),
    m: MasterState = Depends(master),
) -> dict:
    """A rank's capture of the environment it runs in (shipyard.common.environment), sent
    once at its start: ``{"run_id": N, "rank": R, "record": {...}}``."""
    run_id = grant.run(body.get("run_id"))
    if not isinstance(run_id, int) or isinstance(run_id, bool):
        raise InvalidRequest(f"run_id must be an integer, got {run_id!r:.40}")
    mask = functools.partial(m.orchestrator.supervisor.run_secrets.mask, trial_id)
    with m.db.write() as s:
        run_records.store(
            trial_id, run_id, body.get("rank"), body.get("record"), mask=mask, session=s
        )
    return {}


@router.post("/trials/{trial_id}/heartbeat", operation_id="trial_heartbeat")
def trial_heartbeat(
    trial_id: int,
    body: dict[str, Any] = Body(...),
    grant: TaskGrant = Depends(trial_task),
    m: MasterState = Depends(master),
) -> dict:
    """The trial's training loop is alive (see heartbeat_timeout)."""
    with m.db.write() as s:
        trial_reports.heartbeat(trial_id, grant.run(body.get("run_id")), session=s)
    return {}


@router.post("/trials/{trial_id}/run-error", operation_id="report_trial_run_error")
def report_trial_run_error(
    trial_id: int,
    body: dict[str, Any] = Body(...),
    grant: TaskGrant = Depends(trial_task),
    m: MasterState = Depends(master),
) -> dict:
    """The current run says why it is failing (the exception leaving its ``with
    shipyard.core.init()`` block); the supervisor appends it to the run's exit reason.
    ``"append": true`` (a gang launcher saying which rank failed) keeps what the run already
    said after the new message instead of replacing it."""
    message = body.get("message")
    if not isinstance(message, str) or not message.strip():
        raise InvalidRequest(f"message must be a non-empty string, got {message!r:.80}")
    with m.db.write() as s:
        trial_reports.run_error(
            trial_id,
            grant.run(body.get("run_id")),
            message,
            append=body.get("append") is True,
            session=s,
        )
    return {}


@router.get("/trials/{trial_id}/signals", operation_id="get_trial_signals")
async def get_trial_signals(
    trial_id: int,
    version: int = Query(-1),
    wait_s: float = Query(0, ge=0, le=120),
    _grant: TaskGrant = Depends(trial_task),
    m: MasterState = Depends(master),
) -> dict:
    """Long-poll: answers when the master asks the trial to preempt or stop or gives it a
    new target length, or after wait_s."""
    if wait_s:
        await m.hub.wait(trial_id, version, wait_s)

    def read() -> dict:
        version = m.hub.version(trial_id)  # before the row: a later bump cannot be missed
        with m.db.read() as s:
            signals = trial_reports.signals(trial_id, session=s)
        return {"version": version, **signals._asdict()}

    return await run_in_threadpool(read)


# -- a run on a node that does not share the master's disk (shipyard.launch.entry) ------------


@router.get(
    "/trials/{trial_id}/context",
    operation_id="get_trial_context",
    response_class=FileResponse,
    responses={200: {"content": {"application/gzip": {}}, "description": "the archive"}},
)
def get_trial_context(
    trial_id: int,
    _grant: TaskGrant = Depends(trial_task),
    m: MasterState = Depends(master),
) -> FileResponse:
    """The code snapshot of the trial's experiment: a gzip'd tar whose sha256 is its id
    (the run checks it, and a node caches it under that id)."""
    with m.db.read() as s:
        exp = trials.experiment_of(trial_id, session=s)
        context_id = exp.context_id
    if not context_id:
        raise NotFound(f"experiment {exp.id} was submitted without a code directory")
    return FileResponse(
        context_path(m.settings.home, context_id),
        media_type="application/gzip",
        headers={
            "ETag": f'"{context_id}"',
            "Cache-Control": "private, max-age=31536000, immutable",
        },
    )


@router.get("/trials/{trial_id}/config", operation_id="get_trial_config")
def get_trial_config(
    trial_id: int,
    _grant: TaskGrant = Depends(trial_task),
    m: MasterState = Depends(master),
) -> dict[str, Any]:
    """The experiment config the trial runs with (what $SHIPYARD_EXPERIMENT_CONFIG holds),
    with a literal S3 secret_key hidden: the node keeps this file, and the run has the key
    in its storage spec already."""
    with m.db.read() as s:
        config = trials.experiment_of(trial_id, session=s).config
    return checkpoint_storage.without_credentials(dict(config))


@router.post("/trials/{trial_id}/logs", operation_id="send_trial_logs")
def send_trial_logs(
    trial_id: int,
    batch: api.LogBatch,
    grant: TaskGrant = Depends(trial_task),
    m: MasterState = Depends(master),
) -> api.LogBatchStored:
    """Store lines of a run's output; lines already stored (a batch sent again) are skipped.
    The last lines may come after the run ended, so any run of the trial so far is taken."""
    grant.run(batch.run_id)
    with m.db.write() as s:
        trial = trials.get(trial_id, session=s)
        if batch.run_id > trial.run_id:
            raise Conflict(f"trial {trial_id} has had {trial.run_id} runs, not {batch.run_id}")
        lines = m.orchestrator.supervisor.run_secrets.mask_lines(trial_id, batch.lines)
        stored = logs.ingest(trial, batch.run_id, batch.source, batch.first_line, lines, session=s)
    return api.LogBatchStored(stored=stored)
