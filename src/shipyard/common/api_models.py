"""Request and response bodies of the model registry's routes (issue 20): named models of a
workspace, their immutable versions (each one checkpoint), movable aliases, and a
version's lineage (its trial, experiment, code, environment and metrics)."""

from __future__ import annotations

import re
from datetime import datetime
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from shipyard.common.api import CheckpointInfo

MODEL_NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$"
# An alias starts with a letter, so it never reads as a version number ("NAME@3").
ALIAS_PATTERN = r"^[A-Za-z][A-Za-z0-9_-]{0,63}$"
TAG_PATTERN = r"^[^\x00-\x1f\s][^\x00-\x1f]*$"  # no control characters, no leading space
MAX_VERSION = 2**31 - 1

Tag = Annotated[str, Field(min_length=1, max_length=128, pattern=TAG_PATTERN)]
Tags = Annotated[list[Tag], Field(max_length=100)]


def model_name_problem(name: str) -> str | None:
    """Why `name` is no model's name (None: it is a good one)."""
    if re.fullmatch(MODEL_NAME_PATTERN, name):
        return None
    return (
        f"model name {name[:140]!r} is not valid: 1 to 128 letters, digits, '_', '.' or '-', "
        "starting with a letter or a digit"
    )


def alias_problem(alias: str) -> str | None:
    """Why `alias` is no alias (None: it is a good one)."""
    if re.fullmatch(ALIAS_PATTERN, alias):
        return None
    return (
        f"alias {alias[:80]!r} is not valid: 1 to 64 letters, digits, '_' or '-', starting "
        "with a letter (a number would read as a version)"
    )


class CreateModelRequest(BaseModel):
    name: str = Field(pattern=MODEL_NAME_PATTERN, description="unique in its workspace")
    workspace: str | None = Field(
        None, min_length=1, max_length=128, description='default: "Uncategorized"'
    )
    description: str = Field("", max_length=10_000)
    tags: Tags = []


class ModelChange(BaseModel):
    """Fields left out stay as they are; tags, when given, replace the model's."""

    description: str | None = Field(None, max_length=10_000)
    tags: Tags | None = None
    archived: bool | None = Field(None, description="an archived model takes no new version")


class RegisterVersionRequest(BaseModel):
    checkpoint_uuid: str = Field(
        min_length=1,
        max_length=64,
        description="a COMPLETED checkpoint of the model's workspace; never changes after",
    )
    description: str = Field("", max_length=10_000)
    tags: Tags = []


class VersionChange(BaseModel):
    """A version's description and tags (those left out stay); its checkpoint never changes."""

    model_config = ConfigDict(extra="forbid")

    description: str | None = Field(None, max_length=10_000)
    tags: Tags | None = None

    @model_validator(mode="before")
    @classmethod
    def _immutable(cls, data: Any) -> Any:
        if isinstance(data, dict) and "checkpoint_uuid" in data:
            raise ValueError(
                "checkpoint_uuid: a model version's checkpoint never changes; register the "
                "new checkpoint as a new version"
            )
        return data


class SetAliasRequest(BaseModel):
    version: int = Field(ge=1, le=MAX_VERSION, description="the version the alias names now")


class ModelAliasInfo(BaseModel):
    alias: str
    version: int
    updated_at: datetime


class ModelVersionInfo(BaseModel):
    """A version as lists show it: its checkpoint and where that came from."""

    model: str
    workspace: str
    version: int
    checkpoint_uuid: str
    description: str
    tags: list[str]
    created_by: str | None
    created_at: datetime
    aliases: list[str] = Field(description="the aliases naming this version now")
    experiment_id: int
    trial_id: int
    steps_completed: int
    checkpoint_state: str = Field(description="COMPLETED (registered ones are never deleted)")


class ModelSummary(BaseModel):
    id: int
    name: str
    workspace: str
    description: str
    tags: list[str]
    archived: bool
    owner: str | None
    created_at: datetime
    num_versions: int
    latest_version: int | None
    aliases: list[ModelAliasInfo] = Field(description="by name")


class ModelDetail(ModelSummary):
    versions: list[ModelVersionInfo] = Field(description="by version, the first first")


class EnvironmentSummary(BaseModel):
    """The few facts of a run's captured environment (rank 0's) a person looks for first;
    GET /trials/{id}/environment has the whole record."""

    run_id: int
    rank: int
    python: str | None = None
    os: str | None = None
    torch: str | None = None
    cuda: str | None = None
    packages: int = Field(0, description="how many Python packages were installed")
    gpus: list[str] = Field([], description="each GPU's name")
    hashes: dict[str, str] = Field({}, description="each section's hash, to compare runs")
    captured_at: str | None = None


class VersionLineage(BaseModel):
    """Where a version's checkpoint came from."""

    checkpoint: CheckpointInfo
    experiment_id: int
    experiment_name: str
    trial_id: int
    run_id: int
    hyperparameters: dict[str, Any]
    code: dict[str, Any] | None = Field(description="what git said at submit (commit, dirty…)")
    context_id: str | None = Field(description="the code snapshot's content hash")
    image: dict[str, Any] | None = Field(description="what the backend recorded at launch")
    environment: EnvironmentSummary | None = Field(description="None: the run captured none")
    searcher_metric: str | None
    validation_metrics: dict[str, float | None] = Field(
        description="the trial's validation metrics at the checkpoint's step"
    )


class ModelVersionDetail(ModelVersionInfo):
    lineage: VersionLineage


class ModelDeleted(BaseModel):
    name: str
    workspace: str
    versions: int = Field(description="versions deleted (their checkpoints are kept)")
    aliases: list[str] = Field(description="aliases deleted")


class ModelVersionDeleted(BaseModel):
    name: str
    workspace: str
    version: int
    checkpoint_uuid: str = Field(description="the version's checkpoint (kept)")
    aliases: list[str] = Field(description="the aliases that named it, deleted with it")
