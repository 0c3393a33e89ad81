"""The master's tables. Every change to them goes through an Alembic migration."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    String,
    Text,
    UniqueConstraint,
    false,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column
from sqlalchemy.types import TypeDecorator


def utcnow() -> datetime:
    return datetime.now(UTC)


class UTCDateTime(TypeDecorator):
    """A timestamp stored in UTC and read back as UTC: SQLite keeps no offset, and a naive
    time in the API would be read as local time by clients."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Any) -> datetime | None:
        if value is not None and value.tzinfo is not None:
            value = value.astimezone(UTC)
        return value

    def process_result_value(self, value: datetime | None, dialect: Any) -> datetime | None:
        if value is not None and value.tzinfo is None:
            value = value.replace(tzinfo=UTC)
        return value


class Base(DeclarativeBase):
    type_annotation_map = {dict[str, Any]: JSON, list[Any]: JSON}


class Workspace(Base):
    """A team's space (migration 0010 made it an object): its projects, experiments,
    secrets and role bindings, and its quotas (None: no limit)."""

    __tablename__ = "workspaces"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(128), unique=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    archived: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    max_slots: Mapped[int | None] = mapped_column(Integer, nullable=True)
    max_trials: Mapped[int | None] = mapped_column(Integer, nullable=True)  # running at once


class Project(Base):
    """A group of experiments inside a workspace (migration 0010)."""

    __tablename__ = "projects"
    __table_args__ = (UniqueConstraint("workspace_id", "name"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    workspace_id: Mapped[int] = mapped_column(ForeignKey("workspaces.id"), index=True)
    name: Mapped[str] = mapped_column(String(128))
    description: Mapped[str] = mapped_column(Text, default="")
    archived: Mapped[bool] = mapped_column(Boolean, default=False)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)


class Context(Base):
    """A code snapshot (tar.gz), stored once by content hash."""

    __tablename__ = "contexts"
    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    size: Mapped[int] = mapped_column(BigInteger)
    files: Mapped[list[Any]] = mapped_column(JSON)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)


class Experiment(Base):
    __tablename__ = "experiments"
    # SQLite: a deleted experiment's id is never given again (migration 0013).
    __table_args__ = {"sqlite_autoincrement": True}
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    workspace_id: Mapped[int] = mapped_column(ForeignKey("workspaces.id"), index=True)
    # Migration 0010: the project's row (it was the config's free text before).
    project_id: Mapped[int] = mapped_column(ForeignKey("projects.id"), index=True)
    name: Mapped[str] = mapped_column(String(256))
    description: Mapped[str] = mapped_column(Text, default="")
    labels: Mapped[list[Any]] = mapped_column(JSON, default=list)
    config: Mapped[dict[str, Any]] = mapped_column(JSON)
    config_yaml: Mapped[str] = mapped_column(Text)
    context_id: Mapped[str | None] = mapped_column(ForeignKey("contexts.id"), nullable=True)
    state: Mapped[str] = mapped_column(String(16), index=True)
    seed: Mapped[int] = mapped_column(BigInteger)
    checkpoint_base: Mapped[str] = mapped_column(Text)  # where its trials write checkpoints
    priority: Mapped[int] = mapped_column(Integer, default=42)
    # Migration 0004: the pool whose slots its trials run on.
    resource_pool: Mapped[str] = mapped_column(
        String(64), default="default", server_default="default"
    )
    searcher_state: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    searcher_done: Mapped[bool] = mapped_column(Boolean, default=False)
    progress: Mapped[float] = mapped_column(Float, default=0.0)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    ended_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    # Migration 0006: hidden from experiment lists unless asked for (only ended ones).
    archived: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    # Who submitted it: the user's name (migration 0008 kept the client's login name;
    # since migration 0009, the authenticated user's). None: stored before, unknown.
    owner: Mapped[str | None] = mapped_column(String(128), nullable=True)
    # Migration 0012: the experiment this one was forked from (no foreign key: deleting
    # the original leaves its forks as they are).
    forked_from: Mapped[int | None] = mapped_column(Integer, nullable=True)
    # Migration 0014: what git said at submit (shipyard.client.git_capture's record, and
    # the id of the stored diff when it was too large to keep inline). None: not a git
    # work tree, or submitted before.
    code: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    # Migration 0014: `trial rerun`'s experiment: the trial it runs again (no foreign key,
    # as forked_from) and that trial's seed, which its trials get instead of one derived
    # from the experiment's seed.
    rerun_of: Mapped[int | None] = mapped_column(Integer, nullable=True)
    trial_seed: Mapped[int | None] = mapped_column(BigInteger, nullable=True)


class Trial(Base):
    __tablename__ = "trials"
    __table_args__ = (
        UniqueConstraint("experiment_id", "request_id"),
        # SQLite: a deleted trial's id (its task tokens' key) is never given again (0013).
        {"sqlite_autoincrement": True},
    )
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    experiment_id: Mapped[int] = mapped_column(ForeignKey("experiments.id"), index=True)
    workspace_id: Mapped[int] = mapped_column(ForeignKey("workspaces.id"))
    request_id: Mapped[str] = mapped_column(String(64))
    hparams: Mapped[dict[str, Any]] = mapped_column(JSON)
    seed: Mapped[int] = mapped_column(BigInteger)
    state: Mapped[str] = mapped_column(String(16), index=True)
    restarts: Mapped[int] = mapped_column(Integer, default=0)
    run_id: Mapped[int] = mapped_column(Integer, default=0)
    stop_requested: Mapped[bool] = mapped_column(Boolean, default=False)
    preempt_requested: Mapped[bool] = mapped_column(Boolean, default=False)
    preempt_deadline: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    latest_checkpoint: Mapped[str | None] = mapped_column(String(64), nullable=True)
    steps_completed: Mapped[int] = mapped_column(BigInteger, default=0)
    progress: Mapped[float | None] = mapped_column(Float, nullable=True)  # as the trial reports it
    slots: Mapped[list[Any]] = mapped_column(JSON, default=list)
    handle: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    log_offset: Mapped[int] = mapped_column(BigInteger, default=0)
    log_lines: Mapped[int] = mapped_column(Integer, default=0)
    exit_reason: Mapped[str | None] = mapped_column(Text, nullable=True)
    started_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    ended_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    # The searcher's view (migration 0002). target_length: how far the searcher lets the
    # trial train now, in its time unit; searcher_time: where the trial's latest validation
    # says it is. waiting_for_searcher: the trial reached its target and exited to wait for
    # the next one; it is launched again only once target_length > searcher_time.
    target_length: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    searcher_time: Mapped[float | None] = mapped_column(Float, nullable=True)
    waiting_for_searcher: Mapped[bool] = mapped_column(Boolean, default=False)
    stop_deadline: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    parent_trial_id: Mapped[int | None] = mapped_column(Integer, nullable=True)
    searcher_info: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    # Migration 0004. last_heartbeat: when the current run last showed it was alive (a
    # report or a heartbeat); run_error: what the current run said failed before it exited.
    last_heartbeat: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    run_error: Mapped[str | None] = mapped_column(Text, nullable=True)
    # Migration 0007: bumped by every write of the trial's metric points, so a curve
    # computed from older points (a StoredCurve of another version) is never served.
    metrics_version: Mapped[int] = mapped_column(Integer, default=0, server_default="0")


class TrialRun(Base):
    """One launch of a trial and how it ended (migration 0003), for `trial describe`."""

    __tablename__ = "trial_runs"
    trial_id: Mapped[int] = mapped_column(ForeignKey("trials.id"), primary_key=True)
    run_id: Mapped[int] = mapped_column(Integer, primary_key=True)
    slots: Mapped[list[Any]] = mapped_column(JSON, default=list)
    started_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    ended_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    # How it ended and what the master made of it, e.g. "exited with code 3: restarted".
    ended_how: Mapped[str | None] = mapped_column(Text, nullable=True)
    # Where it ran, as its backend said at launch (migration 0005): pool, container image and
    # image id, engine job or node; see Handle.ENVIRONMENT.
    environment: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)


class RunEnvironment(Base):
    """The environment one rank of one run captured at its start (migration 0014;
    shipyard.common.environment): a gang's ranks may sit on different machines."""

    __tablename__ = "run_environments"
    trial_id: Mapped[int] = mapped_column(Integer, primary_key=True)
    run_id: Mapped[int] = mapped_column(Integer, primary_key=True)
    rank: Mapped[int] = mapped_column(Integer, primary_key=True)
    record: Mapped[dict[str, Any]] = mapped_column(JSON)
    received_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)


class SearcherEvent(Base):
    """A validation or an exit the searcher has not seen yet: written with its cause,
    consumed by the experiment driver, so a master restart loses none."""

    __tablename__ = "searcher_events"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    experiment_id: Mapped[int] = mapped_column(ForeignKey("experiments.id"))
    trial_id: Mapped[int] = mapped_column(ForeignKey("trials.id"))
    kind: Mapped[str] = mapped_column(String(16))  # "validation" or "exit"
    payload: Mapped[dict[str, Any]] = mapped_column(JSON)
    processed: Mapped[bool] = mapped_column(Boolean, default=False)
    __table_args__ = (Index("ix_searcher_events_pending", "processed", "experiment_id"),)


class MetricKey(Base):
    __tablename__ = "metric_keys"
    __table_args__ = (UniqueConstraint("name", "group"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(256))
    group: Mapped[str] = mapped_column(String(32))


class MetricPoint(Base):
    """One value per (trial, metric, step): a resent step replaces, never duplicates."""

    __tablename__ = "metric_points"
    __table_args__ = {"sqlite_with_rowid": False}
    trial_id: Mapped[int] = mapped_column(Integer, primary_key=True)
    key_id: Mapped[int] = mapped_column(Integer, primary_key=True)
    steps_completed: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    value: Mapped[float | None] = mapped_column(Float, nullable=True)  # NULL: NaN
    run_id: Mapped[int] = mapped_column(Integer)


class MetricSummary(Base):
    """Per (trial, metric) aggregates kept current on every write: tables never scan points."""

    __tablename__ = "metric_summaries"
    trial_id: Mapped[int] = mapped_column(Integer, primary_key=True)
    key_id: Mapped[int] = mapped_column(Integer, primary_key=True)
    count: Mapped[int] = mapped_column(Integer, default=0)
    last: Mapped[float | None] = mapped_column(Float, nullable=True)
    last_step: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    min: Mapped[float | None] = mapped_column(Float, nullable=True)
    min_step: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    max: Mapped[float | None] = mapped_column(Float, nullable=True)
    max_step: Mapped[int | None] = mapped_column(BigInteger, nullable=True)


class StoredCurve(Base):
    """An ended trial's series of one metric downsampled to max_points (migration 0007),
    kept so that an experiment's curves are not computed again from a million points,
    after a master restart too. Its columns are api.Curve's steps and values, as JSON.
    No foreign key, as for the points it is computed from (which have none either)."""

    __tablename__ = "stored_curves"
    trial_id: Mapped[int] = mapped_column(Integer, primary_key=True)
    key_id: Mapped[int] = mapped_column(Integer, primary_key=True)
    max_points: Mapped[int] = mapped_column(Integer, primary_key=True)
    metrics_version: Mapped[int] = mapped_column(Integer)  # the trial's, when computed
    steps_json: Mapped[str] = mapped_column(Text)
    values_json: Mapped[str] = mapped_column(Text)


class Checkpoint(Base):
    __tablename__ = "checkpoints"
    uuid: Mapped[str] = mapped_column(String(64), primary_key=True)
    experiment_id: Mapped[int] = mapped_column(ForeignKey("experiments.id"), index=True)
    trial_id: Mapped[int] = mapped_column(ForeignKey("trials.id"), index=True)
    workspace_id: Mapped[int] = mapped_column(ForeignKey("workspaces.id"))
    run_id: Mapped[int] = mapped_column(Integer)
    steps_completed: Mapped[int] = mapped_column(BigInteger)
    state: Mapped[str] = mapped_column(String(16), default="COMPLETED")
    meta: Mapped[dict[str, Any]] = mapped_column("metadata", JSON, default=dict)
    resources: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    size: Mapped[int] = mapped_column(BigInteger, default=0)
    storage_path: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)


class Artifact(Base):
    """A file a trial keeps beside its metrics (migration 0014): an image, a text, a table
    or any file, stored in the experiment's checkpoint storage at storage_path. One per
    (trial, name, step): a run that sends it again replaces it."""

    __tablename__ = "artifacts"
    __table_args__ = (UniqueConstraint("trial_id", "name", "steps_completed"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    experiment_id: Mapped[int] = mapped_column(Integer)
    trial_id: Mapped[int] = mapped_column(Integer, index=True)
    run_id: Mapped[int] = mapped_column(Integer)
    name: Mapped[str] = mapped_column(String(256))
    steps_completed: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    kind: Mapped[str] = mapped_column(String(16))  # image, text, table or file
    media_type: Mapped[str] = mapped_column(String(128))
    size: Mapped[int] = mapped_column(BigInteger)
    sha256: Mapped[str] = mapped_column(String(64))
    storage_path: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)


class Model(Base):
    """A named model of a workspace (migration 0014): its versions are checkpoints."""

    __tablename__ = "models"
    __table_args__ = (UniqueConstraint("workspace_id", "name"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    workspace_id: Mapped[int] = mapped_column(ForeignKey("workspaces.id"))
    name: Mapped[str] = mapped_column(String(256))
    description: Mapped[str] = mapped_column(Text, default="", server_default="")
    tags: Mapped[list[Any]] = mapped_column(JSON, default=list)
    archived: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    owner: Mapped[str | None] = mapped_column(String(128), nullable=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    # The highest version number given (migration 0015): a deleted one's is never reused.
    last_version: Mapped[int] = mapped_column(Integer, default=0, server_default="0")


class ModelVersion(Base):
    """Version N of a model: one checkpoint, never changed (only its description and tags);
    a registered checkpoint is never deleted by retention."""

    __tablename__ = "model_versions"
    model_id: Mapped[int] = mapped_column(ForeignKey("models.id"), primary_key=True)
    version: Mapped[int] = mapped_column(Integer, primary_key=True)
    checkpoint_uuid: Mapped[str] = mapped_column(ForeignKey("checkpoints.uuid"), index=True)
    description: Mapped[str] = mapped_column(Text, default="", server_default="")
    tags: Mapped[list[Any]] = mapped_column(JSON, default=list)
    created_by: Mapped[str | None] = mapped_column(String(128), nullable=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)


class ModelAlias(Base):
    """A movable name for one version of a model (e.g. "production")."""

    __tablename__ = "model_aliases"
    model_id: Mapped[int] = mapped_column(ForeignKey("models.id"), primary_key=True)
    alias: Mapped[str] = mapped_column(String(64), primary_key=True)
    version: Mapped[int] = mapped_column(Integer)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)


class LogLine(Base):
    __tablename__ = "logs"
    __table_args__ = (
        UniqueConstraint("trial_id", "run_id", "rank", "line_no"),
        Index("ix_logs_experiment", "experiment_id", "id"),
    )
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    experiment_id: Mapped[int] = mapped_column(Integer)
    trial_id: Mapped[int] = mapped_column(Integer, index=True)
    run_id: Mapped[int] = mapped_column(Integer)
    rank: Mapped[int] = mapped_column(Integer, default=0)
    line_no: Mapped[int] = mapped_column(Integer)
    stream: Mapped[str] = mapped_column(String(8), default="output")
    text: Mapped[str] = mapped_column(Text)
    time: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)


class LogCursor(Base):
    """How many lines of a run's output from one source (a node of its gang) the master has
    stored, when the run sends them over HTTP (migration 0011): a batch sent again is
    stored once."""

    __tablename__ = "log_cursors"
    trial_id: Mapped[int] = mapped_column(Integer, primary_key=True)
    run_id: Mapped[int] = mapped_column(Integer, primary_key=True)
    source: Mapped[int] = mapped_column(Integer, primary_key=True)
    lines: Mapped[int] = mapped_column(Integer, default=0)


class User(Base):
    """A person or a service account (migration 0009). A user without a password hash
    cannot log in with a password (an owner name carried over from before users existed,
    a service account): only tokens an admin creates for it work."""

    __tablename__ = "users"
    # A cluster admin is a user with that role at cluster scope (RoleBinding), directly or
    # through a group: migration 0010 turned the is_admin column into such bindings.
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    username: Mapped[str] = mapped_column(String(128), unique=True)
    password_hash: Mapped[str | None] = mapped_column(String(256), nullable=True)
    is_service: Mapped[bool] = mapped_column(Boolean, default=False)
    active: Mapped[bool] = mapped_column(Boolean, default=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)


class ApiToken(Base):
    """An API token, a login session or a single-use login ticket of a user. Only the
    SHA-256 of the secret is stored; `prefix` (its first characters) names it in lists."""

    __tablename__ = "api_tokens"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id"), index=True)
    kind: Mapped[str] = mapped_column(String(16))  # api | session | ticket
    name: Mapped[str] = mapped_column(String(128), default="")
    prefix: Mapped[str] = mapped_column(String(16))
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    expires_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    revoked_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    last_used_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)


class AuditEvent(Base):
    """Who did what to what, from where: logins, tokens, users, admin actions."""

    __tablename__ = "audit_events"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow, index=True)
    actor: Mapped[str] = mapped_column(String(128), index=True)  # a username, or "-"
    action: Mapped[str] = mapped_column(String(64))
    target: Mapped[str] = mapped_column(String(256), default="")
    address: Mapped[str] = mapped_column(String(64), default="")
    detail: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)


class Group(Base):
    """Users who get the same roles (migration 0010)."""

    __tablename__ = "groups"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(128), unique=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)


class GroupMember(Base):
    __tablename__ = "group_members"
    group_id: Mapped[int] = mapped_column(ForeignKey("groups.id"), primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id"), primary_key=True, index=True)


class RoleBinding(Base):
    """A role (auth.permissions.Role) given to a user or a group, in one workspace or, with
    workspace_id None, in every workspace and over the cluster (migration 0010)."""

    __tablename__ = "role_bindings"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    role: Mapped[str] = mapped_column(String(32))
    user_id: Mapped[int | None] = mapped_column(ForeignKey("users.id"), nullable=True, index=True)
    group_id: Mapped[int | None] = mapped_column(ForeignKey("groups.id"), nullable=True, index=True)
    workspace_id: Mapped[int | None] = mapped_column(ForeignKey("workspaces.id"), nullable=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)


class Secret(Base):
    """A workspace's secret (migration 0010), encrypted with AES-GCM under a key kept
    outside the database (auth.secret_box); the row's identity is the associated data, so
    a ciphertext copied to another row does not decrypt."""

    __tablename__ = "secrets"
    __table_args__ = (UniqueConstraint("workspace_id", "name"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    workspace_id: Mapped[int] = mapped_column(ForeignKey("workspaces.id"))
    name: Mapped[str] = mapped_column(String(128))
    version: Mapped[int] = mapped_column(Integer, default=1)
    key_id: Mapped[str] = mapped_column(String(32))
    nonce: Mapped[bytes] = mapped_column(LargeBinary)
    ciphertext: Mapped[bytes] = mapped_column(LargeBinary)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    updated_by: Mapped[str] = mapped_column(String(128), default="")
