"""What a run ran (issue 20): the environment each rank captured, and two trials diffed."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, Field


class RankEnvironment(BaseModel):
    rank: int
    # shipyard.common.environment's record: sections, their hashes, volatile fields, errors.
    record: dict[str, Any]
    received_at: datetime


class TrialEnvironment(BaseModel):
    """GET /trials/{id}/environment: one run of a trial, everything that says what it ran."""

    trial_id: int
    experiment_id: int
    run_id: int | None = Field(description="the run described (None: no run has started)")
    code: dict[str, Any] | None = Field(description="what git said at submit")
    context_id: str | None = Field(description="the code snapshot's content hash")
    hyperparameters: dict[str, Any]
    seed: int
    image: dict[str, Any] | None = Field(description="what the backend recorded at launch")
    ranks: list[RankEnvironment] = Field(description="each rank's capture, by rank")


class Difference(BaseModel):
    category: str  # code, hyperparameters, config, packages, framework, gpu, cpu, ...
    item: str  # e.g. "torch.cuda", "numpy", "flags.avx2", "NCCL_DEBUG"
    change: str  # added, removed or changed
    a: Any = None
    b: Any = None


class TrialDiff(BaseModel):
    """GET /trials/{a}/diff/{b}: every difference between what two trials ran, volatile
    fields (host, time, GPU UUIDs) left out."""

    a: int
    b: int
    rank: int
    identical: bool
    differences: list[Difference]
    # What could not be compared: e.g. "environment of trial 7" (no run captured one).
    missing: list[str] = []
