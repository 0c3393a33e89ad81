"""Request and response bodies of the REST API (/api/v1).

The server builds these from its ORM rows; the client parses answers into them; the CLI
prints them. Field names are the JSON names.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from shipyard.common.states import ExperimentState, TrialState


class ErrorInfo(BaseModel):
    type: str  # the error's kind: InvalidRequest, Unauthorized, NotFound, ConfigError, ...
    message: str  # what was wrong, for a person
    # One entry per problem, e.g. {"path": "searcher.metric", "message": ..., "line": 12}.
    details: list[dict[str, Any]] = []


class ErrorResponse(BaseModel):
    """Every 4xx (and the 500 a bug makes) answers this body."""

    error: ErrorInfo


class MasterInfo(BaseModel):
    version: str
    started_at: datetime
    database: str  # "sqlite" or "postgresql"
    home: str
    backend: str  # "local", ...


class SlotInfo(BaseModel):
    id: str  # "cpu0", "gpu1"
    kind: str  # "cpu" or "gpu"
    device: str  # GPU name/uuid, or "cpu"
    pool: str | None = None  # its resource pool (None: in no pool, unused)
    busy: bool = False  # held by a trial
    trial_id: int | None = None  # None when free, or held by another workspace's trial
    experiment_id: int | None = None


class ContextUploaded(BaseModel):
    id: str  # sha256 of the archive
    size: int


class CreateExperimentRequest(BaseModel):
    config_yaml: str = Field(description="The experiment config as YAML (or JSON) text")
    context_id: str | None = Field(None, description="id returned by upload_context")
    config_file: str = Field("config.yaml", description="file name, for error messages")
    owner: str | None = Field(
        None,
        min_length=1,
        max_length=128,
        description="ignored: the owner is the user whose token submits it (older "
        "clients sent their login name here)",
    )
    paused: bool = Field(False, description="create it paused: no trial starts until activate")
    code: dict[str, Any] | None = Field(
        None,
        description="what git said of the code at submit (commit, branch, remote without "
        "credentials, dirty, the diff against HEAD or the id of its stored blob, unpushed "
        "commits); None: not a git work tree",
    )


class PreviewSearchRequest(BaseModel):
    config_yaml: str = Field(description="The experiment config as YAML (or JSON) text")
    config_file: str = Field("config.yaml", description="file name, for error messages")


class PreviewRung(BaseModel):
    rung: int
    trials: int  # how many trials reach this rung (expected, for asynchronous searchers)
    length: int | None  # how far a trial trains by this rung's end (None: the search sets none)


class PreviewBracket(BaseModel):
    bracket: int
    trials: int
    rungs: list[PreviewRung]
    compute: float


class SearchPreview(BaseModel):
    """What a search will run, worked out from its config alone (`shipyard preview-search`)."""

    searcher: str
    unit: str  # the time_metric, "steps", or "trials" when the search sets no length
    brackets: list[PreviewBracket] = []
    total_trials: int
    compute: float
    random_search_compute: float  # the same trials, each trained to the full length
    ratio: float | None = None  # compute / random_search_compute
    note: str | None = None


class MetricSummary(BaseModel):
    name: str
    group: str  # "training", "validation" or any group a trial reported
    count: int
    last: float | None
    last_step: int | None
    min: float | None
    max: float | None
    best: float | None
    best_step: int | None


class TrialSummary(BaseModel):
    id: int
    experiment_id: int
    request_id: str
    state: TrialState
    hparams: dict[str, Any]
    restarts: int
    run_id: int
    steps_completed: int  # highest steps_completed reported in any group
    searcher_metric: str | None = None
    best_validation: float | None = None  # best value of the searcher metric
    latest_validation: float | None = None
    latest_checkpoint: str | None = None
    slots: list[str] = []
    started_at: datetime | None = None
    ended_at: datetime | None = None
    # The searcher's view: rung (ASHA, Hyperband) or round (PBT), its note on the trial.
    rung: int | None = None
    searcher_info: dict[str, Any] = {}
    target_length: int | None = None  # how far the searcher lets it train now
    parent_trial_id: int | None = None  # PBT: the trial whose checkpoint it started from
    # Why it ended ("completed", "searcher stop: ...", "errored: ...", "canceled"), or why
    # a live trial waits ("waiting for the searcher at 16").
    end_reason: str | None = None


class RunInfo(BaseModel):
    """One launch of a trial."""

    run_id: int
    slots: list[str] = []
    started_at: datetime
    ended_at: datetime | None = None
    ended_how: str | None = None  # e.g. "exited with code 3; restart 1 of 5"
    # Where it ran: backend, pool, and what the backend recorded (image and image_id, job).
    environment: dict[str, Any] | None = None


class TrialDetail(TrialSummary):
    workspace: str
    seed: int
    exit_reason: str | None = None
    metrics: list[MetricSummary] = []
    last_log_lines: list[str] = []  # filled for ERRORED trials: the lines before the failure
    runs: list[RunInfo] = []  # every launch, oldest first


class ExperimentSummary(BaseModel):
    id: int
    name: str
    description: str = ""
    labels: list[str] = []
    workspace: str
    project: str
    owner: str | None = None  # who submitted it (its login name), None if not said
    state: ExperimentState
    searcher: str
    metric: str
    smaller_is_better: bool
    progress: float
    num_trials: int
    trial_states: dict[str, int] = {}
    best_validation: float | None = None
    best_trial_id: int | None = None
    created_at: datetime
    ended_at: datetime | None = None
    archived: bool = False  # hidden from lists unless asked for (only ended ones)
    forked_from: int | None = None  # the experiment it was forked from (`experiment fork`)
    rerun_of: int | None = None  # the trial it runs again (`trial rerun`)


class ExperimentDetail(ExperimentSummary):
    config: dict[str, Any]
    context_id: str | None
    # What git said of the code at submit (None: not a git work tree, or submitted before).
    code: dict[str, Any] | None = None
    trials: list[TrialSummary] = []
    # What the searcher says of the whole search: brackets (ASHA), lineage (PBT), the
    # Pareto front (multi-objective Optuna).
    searcher_summary: dict[str, Any] = {}


class ExperimentOverview(ExperimentSummary):
    """GET /experiments/{id}/summary: the experiment as the list shows it, and its config,
    without its trials (a page about one trial needs no more of it)."""

    config: dict[str, Any]


class TrialListItem(BaseModel):
    """GET /trials: a trial of any experiment, with what says how it went."""

    id: int
    experiment_id: int
    experiment_name: str
    state: TrialState
    restarts: int
    run_id: int
    steps_completed: int
    started_at: datetime | None = None
    ended_at: datetime | None = None
    exit_reason: str | None = None  # what the master recorded when it ended
    end_reason: str | None = None  # as TrialSummary.end_reason says it


class CheckpointInfo(BaseModel):
    uuid: str
    experiment_id: int
    trial_id: int
    run_id: int
    steps_completed: int
    state: str  # "COMPLETED" or "DELETED"
    metadata: dict[str, Any] = {}
    resources: dict[str, int] = {}
    size: int
    storage_path: str
    created_at: datetime
    validation: float | None = None  # searcher metric at this step, when reported


class CheckpointFileLink(BaseModel):
    path: str  # relative to the checkpoint
    size: int
    url: str  # a short-lived GET URL straight to the store (no Shipyard token needed)


class CheckpointLinks(BaseModel):
    """Where to fetch a checkpoint's files from: straight from an object store that gives
    short-lived URLs (direct: true), else through GET /checkpoints/{uuid}/download."""

    uuid: str
    direct: bool
    expires_in_s: int = 0
    files: list[CheckpointFileLink] = []


# LogLine.stream: a process's own output; one rank's output under a gang launcher
# (python3 -m shipyard.launch.<name>), which the launcher wrote as "[rank=R] text"; the
# launcher's own messages ("[launcher] text", stored with rank 0).
LOG_STREAM_OUTPUT = "output"
LOG_STREAM_RANK = "rank"
LOG_STREAM_LAUNCHER = "launcher"


def log_prefix(rank: int, stream: str) -> str:
    """How a log line is shown to a person: a gang's lines carry their rank."""
    if stream == LOG_STREAM_LAUNCHER:
        return "[launcher] "
    if stream == LOG_STREAM_RANK or rank:
        return f"[rank {rank}] "
    return ""


class LogLine(BaseModel):
    id: int  # cursor: pass as after= to read what follows
    trial_id: int
    run_id: int
    rank: int
    line_no: int
    stream: str  # LOG_STREAM_OUTPUT, LOG_STREAM_RANK or LOG_STREAM_LAUNCHER
    text: str
    time: datetime


class LogPage(BaseModel):
    lines: list[LogLine]
    next_after: int  # give back as after= to continue
    done: bool  # the trial (or experiment) has ended and every line has been read


class LogBatch(BaseModel):
    """Lines of a run's output sent by the run itself (shipyard.launch.entry), numbered per
    (run, source) from 0: lines the master already has are skipped."""

    model_config = ConfigDict(extra="forbid")
    run_id: int = Field(ge=1)
    source: int = Field(0, ge=0, le=1_000_000, description="the node of the gang that sent them")
    first_line: int = Field(ge=0, description="the number of the first of these lines")
    lines: list[str] = Field(max_length=100_000)


class LogBatchStored(BaseModel):
    stored: int  # lines new to the master (the rest it had already)


class MetricPoint(BaseModel):
    steps_completed: int
    value: float | None


class MetricSeries(BaseModel):
    trial_id: int
    name: str
    group: str
    points: list[MetricPoint]


class MetricName(BaseModel):
    """A metric some trial of an experiment reported."""

    name: str
    group: str  # "training", "validation" or any group a trial reported


class Curve(BaseModel):
    """One trial's series of one metric as two columns, steps[i] and values[i]: an
    experiment's curves are a thousand series at once, and an object per point doubled the
    answer's size and the browser's time to read it."""

    trial_id: int
    steps: list[int]
    values: list[float | None]  # None: not finite


class ExperimentResources(BaseModel):
    """Scheduling settings changed on a live experiment; a field left out stays as it is
    (max_slots null removes the cap)."""

    model_config = ConfigDict(extra="forbid")

    priority: int | None = Field(None, ge=1, le=99, description="1..99, smaller runs first")
    weight: float | None = Field(None, gt=0, description="fair share among equal priorities")
    max_slots: int | None = Field(None, ge=1, description="slots the experiment holds at most")


class PoolInfo(BaseModel):
    """A resource pool, as `shipyard pool list` shows it."""

    name: str
    type: str  # its backend: local, ray, slurm
    description: str = ""
    default: bool = False  # experiments without resources.resource_pool go here
    slots_total: int
    slots_used: int
    scheduler: str
    preemption: bool
    healthy: bool
    # Why its engine cannot run trials now (its trials wait with this reason).
    problem: str | None = None


class JobInfo(BaseModel):
    """One trial in the scheduler's view: running, or queued with the reason it waits."""

    position: int  # 1 = the first the scheduler looks at
    trial_id: int
    experiment_id: int
    experiment_name: str
    resource_pool: str = "default"
    state: str
    priority: int
    weight: float
    slots_needed: int
    slots: list[str] = []  # the slots of a running trial
    reason: str


class ActionResult(BaseModel):
    id: int
    state: str
