"""A workspace's secrets: set (a new version), listed by name (never by value), deleted,
checked when an experiment that names them is submitted, opened for a run (after checking
again that its owner may still use them) or for the master's own use of an experiment's
checkpoint storage keys, and re-sealed under a new key.

Values are sealed by auth.secret_box with the row's identity (workspace id, name, version)
as associated data. The keyring is read inside the write transaction that uses it: see
secret_box on why that keeps rotation safe."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.orm import Session, object_session

from shipyard.common import api_teams
from shipyard.common.config import ExperimentConfig
from shipyard.common.config.checkpoint import S3Storage
from shipyard.common.errors import ConfigError, Conflict, InvalidRequest, NotFound, ShipyardError
from shipyard.common.permissions import roles_allowed
from shipyard.server import orm
from shipyard.server.auth import secret_box
from shipyard.server.auth.permissions import Action, Grants
from shipyard.server.auth.secret_box import Sealed, SecretBox, SecretUnreadable
from shipyard.server.db import Database
from shipyard.server.orm import utcnow
from shipyard.server.services import audit, rbac, users
from shipyard.server.services.experiment_config import config_of
from shipyard.server.settings import Settings

_NAME = re.compile(api_teams.SECRET_NAME_PATTERN)


class SecretsUnavailable(ConfigError):
    """A run cannot get its secrets (one was deleted, its owner lost the right to use
    them): the run does not start, and restarting it would fail the same way."""


def identity(workspace_id: int, name: str, version: int) -> bytes:
    """The associated data a value is sealed with: it opens only in its own row."""
    return f"shipyard-secret:v1:{workspace_id}:{name}:{version}".encode()


def _sealed(row: orm.Secret) -> Sealed:
    return Sealed(row.key_id, row.nonce, row.ciphertext)


def _seal(row: orm.Secret, value: str, box: SecretBox) -> None:
    sealed = box.seal(value, identity(row.workspace_id, row.name, row.version))
    row.key_id, row.nonce, row.ciphertext = sealed.key_id, sealed.nonce, sealed.ciphertext


def _open(row: orm.Secret, box: SecretBox) -> str:
    return box.open(_sealed(row), identity(row.workspace_id, row.name, row.version))


def info(row: orm.Secret, workspace: orm.Workspace) -> api_teams.SecretInfo:
    return api_teams.SecretInfo(
        workspace=workspace.name,
        name=row.name,
        version=row.version,
        created_at=row.created_at,
        updated_at=row.updated_at,
        updated_by=row.updated_by,
    )


def list_all(workspace: orm.Workspace, *, session: Session) -> list[api_teams.SecretInfo]:
    rows = session.scalars(
        select(orm.Secret).where(orm.Secret.workspace_id == workspace.id).order_by(orm.Secret.name)
    )
    return [info(row, workspace) for row in rows]


def _find(workspace_id: int, name: str, session: Session) -> orm.Secret | None:
    return session.scalar(
        select(orm.Secret).where(orm.Secret.workspace_id == workspace_id, orm.Secret.name == name)
    )


def check_name(name: str) -> None:
    if not _NAME.match(name):
        raise InvalidRequest(
            f"{name!r} is not a valid secret name",
            [{"path": "name", "message": "letters, digits and _, not starting with a digit"}],
        )


def _check_value(value: str) -> None:
    problem = None
    if "\x00" in value:
        problem = "a value cannot hold a NUL character (it could not be a variable's value)"
    else:
        try:
            value.encode()
        except UnicodeEncodeError:
            problem = "a value must be valid Unicode text (it holds a lone surrogate)"
    if problem:
        raise InvalidRequest(problem, [{"path": "value", "message": problem}])


def set_value(
    workspace: orm.Workspace,
    name: str,
    value: str,
    *,
    by: str,
    settings: Settings,
    session: Session,
) -> orm.Secret:
    """Create the secret (version 1) or give it a new value (the next version). Call it in a
    write transaction: the keyring is read here (see the module's docstring)."""
    check_name(name)
    _check_value(value)
    box = SecretBox.of_settings(settings)
    row = _find(workspace.id, name, session)
    now = utcnow()
    if row is None:
        row = orm.Secret(workspace_id=workspace.id, name=name, version=0, created_at=now)
        session.add(row)
    row.version += 1
    _seal(row, value, box)
    row.updated_at, row.updated_by = now, by
    session.flush()
    return row


def delete(workspace: orm.Workspace, name: str, *, session: Session) -> None:
    row = _find(workspace.id, name, session)
    if row is None:
        raise NotFound(f"no secret {name!r} in workspace {workspace.name!r}")
    session.delete(row)


# -- experiments that use secrets ------------------------------------------------------------


def storage_secrets(cfg: ExperimentConfig) -> dict[str, str]:
    """{field: secret name} of the checkpoint storage's keys given as `{secret: NAME}`."""
    storage = cfg.checkpoint_storage
    return storage.secret_names() if isinstance(storage, S3Storage) else {}


def names_used(cfg: ExperimentConfig) -> list[str]:
    """Every secret the experiment's runs get: those of `secrets:`, then the storage keys'."""
    return list(dict.fromkeys([*(use.name for use in cfg.secrets), *storage_secrets(cfg).values()]))


def check_at_submit(
    cfg: ExperimentConfig, workspace_id: int, grants: Grants, *, session: Session
) -> None:
    """The submitter may use the workspace's secrets (403 otherwise), and every secret the
    config names exists there (a ConfigError naming `secrets[i]` or
    `checkpoint_storage.access_key`/`.secret_key` otherwise)."""
    named: list[tuple[tuple, str, str]] = [
        (("secrets", i), f"secrets[{i}]", use.name) for i, use in enumerate(cfg.secrets)
    ]
    for field, name in storage_secrets(cfg).items():
        named.append((("checkpoint_storage", field), f"checkpoint_storage.{field}", name))
    if not named:
        return
    workspace = session.get_one(orm.Workspace, workspace_id)
    grants.require(Action.USE_SECRETS, workspace_id, f"workspace {workspace.name!r}")
    existing = _names(workspace_id, session)
    problems = []
    for where, path, name in named:
        if name not in existing:
            line, column = cfg.position(where)
            message = (
                f"there is no secret {name!r} in workspace {workspace.name!r} "
                f"(`shipyard secret set {workspace.name} {name}` makes it)"
            )
            problems.append({"path": path, "message": message, "line": line, "column": column})
    if len(problems) == 1:
        raise ConfigError(f"{problems[0]['path']}: {problems[0]['message']}", problems)
    if problems:
        missing = f"{len(problems)} secrets the config names are not in workspace"
        raise ConfigError(f"{missing} {workspace.name!r}", problems)


def _names(workspace_id: int, session: Session) -> set[str]:
    return set(
        session.scalars(select(orm.Secret.name).where(orm.Secret.workspace_id == workspace_id))
    )


@dataclass(frozen=True)
class RunValues:
    """The opened values of an experiment's secrets, by secret name."""

    values: dict[str, str]
    owner: str
    workspace: str


def open_for_run(
    exp: orm.Experiment, *, check_owner: bool, settings: Settings, session: Session
) -> RunValues:
    """The values a run of the experiment gets, checked again as at submit: its owner is
    still an active user who may use the workspace's secrets (unless authentication is
    off), and each secret still exists. SecretsUnavailable says what is wrong. Call it in a
    write transaction (the keyring is read here)."""
    workspace = session.get_one(orm.Workspace, exp.workspace_id)
    owner = exp.owner or ""
    if check_owner:
        _check_owner(owner, workspace, session)
    values = _values(workspace, names_used(config_of(exp)), settings, session)
    return RunValues(values=values, owner=owner, workspace=workspace.name)


def _values(
    workspace: orm.Workspace, names: Iterable[str], settings: Settings, session: Session
) -> dict[str, str]:
    """The values of the workspace's secrets `names`; SecretsUnavailable for one that is gone
    or does not open."""
    names = list(names)
    rows = {
        row.name: row
        for row in session.scalars(
            select(orm.Secret).where(
                orm.Secret.workspace_id == workspace.id, orm.Secret.name.in_(names)
            )
        )
    }
    box = SecretBox.of_settings(settings) if rows else None
    values = {}
    for name in names:
        row = rows.get(name)
        if row is None:
            raise SecretsUnavailable(
                f"secret {name!r} no longer exists in workspace {workspace.name!r}"
            )
        assert box is not None
        try:
            values[name] = _open(row, box)
        except SecretUnreadable as exc:
            raise SecretsUnavailable(
                f"secret {name!r} of workspace {workspace.name!r} cannot be read: {exc.message}"
            ) from None
    return values


def _check_owner(owner: str, workspace: orm.Workspace, session: Session) -> None:
    user = users.find(owner, session=session) if owner else None
    if user is None or not user.active:
        who = f"its owner {owner!r} is no longer an active user" if owner else "it has no owner"
        raise SecretsUnavailable(f"the experiment's secrets are not given out: {who}")
    if not rbac.grants_of(user.id, session=session).allows(Action.USE_SECRETS, workspace.id):
        raise SecretsUnavailable(
            f"the experiment's secrets are not given out: its owner {owner!r} no longer "
            f"holds a role that may use the secrets of workspace {workspace.name!r} "
            f"({roles_allowed(Action.USE_SECRETS)})"
        )


def record_use(values: RunValues, trial: orm.Trial, *, session: Session) -> None:
    """The audit event of a run given its secrets, in the owner's name."""
    audit.record(
        "secret.use",
        actor=values.owner or "-",
        target=f"workspace:{values.workspace}",
        session=session,
        trial=trial.id,
        run=trial.run_id,
        secrets=sorted(values.values),
    )


# -- the master's own use -----------------------------------------------------------------------
# The master itself uses the checkpoint storage keys an experiment names as `{secret: NAME}`:
# to check the bucket at submit, for retention and for downloads. Those services get no
# Settings (the keyring's place), so each master's are found by the database its sessions
# use, registered when the master's run supervisor starts (workers/run_secrets.py).

_MASTERS: dict[str, tuple[Settings, Database]] = {}


def serve(settings: Settings, db: Database) -> None:
    _MASTERS[str(db.engine.url)] = (settings, db)


def _master_of(session: Session | None) -> tuple[Settings, Database]:
    found = _MASTERS.get(str(session.get_bind().engine.url)) if session is not None else None
    if found is None:
        raise ShipyardError("no master serves this database's secrets (none started here)")
    return found


def open_at_submit(workspace_id: int, names: Iterable[str], *, session: Session) -> dict[str, str]:
    """The values of secrets an experiment being submitted names, in the submit's write
    transaction, after check_at_submit."""
    settings, _db = _master_of(session)
    return _values(session.get_one(orm.Workspace, workspace_id), names, settings, session)


def open_for_master(exp: orm.Experiment, names: Iterable[str]) -> dict[str, str]:
    """The current values of the experiment's secrets `names`, for the master's own use: no
    owner check, since the master keeps them (it signs requests and URLs with them; a
    presigned URL carries the access key id, as every S3 one does, never the secret key).
    Opened in a write transaction of its own (see the module's docstring), so never call
    it inside one; `exp` is a row of an open session."""
    settings, db = _master_of(object_session(exp))
    with db.write() as s:
        return _values(s.get_one(orm.Workspace, exp.workspace_id), names, settings, s)


# -- rotation ----------------------------------------------------------------------------------


def rotate(
    db: Database, settings: Settings, *, actor: str, address: str
) -> api_teams.RotateKeysResult:
    """Re-seal every secret under a new key, crash-safe (see auth.secret_box): the new key
    joins the keyring first, the rows change in one transaction, the old keys go last."""
    with secret_box.ROTATION_LOCK:
        box = SecretBox.of_settings(settings).with_new_key(settings.home)
        with db.write() as s:
            rows = list(s.scalars(select(orm.Secret)))
            for row in rows:
                _reseal(row, box, s)
            audit.record(
                "keys.rotate",
                actor=actor,
                address=address,
                session=s,
                key_id=box.current,
                reencrypted=len(rows),
            )
        box.without_old_keys(settings.home)
    return api_teams.RotateKeysResult(reencrypted=len(rows), key_id=box.current)


def _reseal(row: orm.Secret, box: SecretBox, session: Session) -> None:
    try:
        value = _open(row, box)
    except SecretUnreadable as exc:
        workspace = session.get_one(orm.Workspace, row.workspace_id)
        raise Conflict(
            f"secret {row.name!r} of workspace {workspace.name!r} does not open ({exc.message}); "
            "nothing was re-sealed: set it again or delete it, then rotate"
        ) from None
    _seal(row, value, box)
