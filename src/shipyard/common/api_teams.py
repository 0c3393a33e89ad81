"""Request and response bodies of the REST API's workspaces, projects, groups, roles and
secrets routes."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, Field

NAME_PATTERN = r"^[^\x00-\x1f/]+$"  # no control characters, no "/" (names go in URLs)
SECRET_NAME_PATTERN = r"^[A-Za-z_][A-Za-z0-9_]*$"  # an environment variable's name
RoleName = Literal["viewer", "editor", "workspace_admin", "cluster_admin"]


class WorkspaceInfo(BaseModel):
    id: int
    name: str
    archived: bool
    created_at: datetime
    max_slots: int | None  # None: no limit
    max_trials: int | None
    slots_in_use: int
    trials_running: int
    num_projects: int
    num_experiments: int


class CreateWorkspaceRequest(BaseModel):
    name: str = Field(min_length=1, max_length=128, pattern=NAME_PATTERN)


class WorkspaceChange(BaseModel):
    name: str | None = Field(None, min_length=1, max_length=128, pattern=NAME_PATTERN)
    archived: bool | None = None


class QuotaChange(BaseModel):
    """Fields left out stay as they are; null removes the limit."""

    max_slots: int | None = Field(None, ge=0, le=1_000_000)
    max_trials: int | None = Field(None, ge=0, le=1_000_000)


class ProjectInfo(BaseModel):
    id: int
    workspace: str
    name: str
    description: str
    archived: bool
    created_at: datetime
    num_experiments: int


class CreateProjectRequest(BaseModel):
    name: str = Field(min_length=1, max_length=128, pattern=NAME_PATTERN)
    description: str = Field("", max_length=10_000)


class ProjectChange(BaseModel):
    name: str | None = Field(None, min_length=1, max_length=128, pattern=NAME_PATTERN)
    description: str | None = Field(None, max_length=10_000)
    archived: bool | None = None


class MoveExperimentRequest(BaseModel):
    workspace: str = Field(min_length=1, max_length=128)
    project: str = Field(min_length=1, max_length=128)


class GroupInfo(BaseModel):
    name: str
    members: list[str]
    created_at: datetime


class CreateGroupRequest(BaseModel):
    name: str = Field(min_length=1, max_length=128, pattern=NAME_PATTERN)


class RoleBindingRequest(BaseModel):
    """Exactly one of user and group; workspace left out: cluster scope."""

    role: RoleName
    user: str | None = Field(None, min_length=1, max_length=128)
    group: str | None = Field(None, min_length=1, max_length=128)
    workspace: str | None = Field(None, min_length=1, max_length=128)


class RoleBindingInfo(BaseModel):
    id: int
    role: RoleName
    user: str | None
    group: str | None
    workspace: str | None  # None: cluster scope
    created_at: datetime


class SecretInfo(BaseModel):
    """A secret's name and history; its value is never returned."""

    workspace: str
    name: str
    version: int
    created_at: datetime
    updated_at: datetime
    updated_by: str


class SetSecretRequest(BaseModel):
    value: str = Field(min_length=1, max_length=65_536)


class RotateKeysResult(BaseModel):
    """What a rotation of the secrets key did: the rows sealed anew, under this key."""

    reencrypted: int
    key_id: str
