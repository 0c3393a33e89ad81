"""The experiment and checkpoint commands where two things happen at once: a checkpoint is
marked deleted before its files go (and kept if they stay), an experiment being deleted
is archived first (so nothing continues it meanwhile), a checkpoint whose files retention
or an experiment's deletion is removing cannot be registered as a model version,
`continue` waits for its searcher to hear the last exits, a user's `trial kill` is not
undone by a searcher's stop or by a master restart, and retention skips an experiment
deleted since it ended."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from shipyard.common.api_experiments import ContinueExperimentRequest
from shipyard.common.api_models import CreateModelRequest, RegisterVersionRequest
from shipyard.common.config import load_config
from shipyard.common.errors import Conflict, ShipyardError
from shipyard.server import orm
from shipyard.server.auth.permissions import EVERYTHING
from shipyard.server.db import Database
from shipyard.server.orm import utcnow
from shipyard.server.services import (
    checkpoint_gc,
    checkpoints,
    experiment_continue,
    experiment_records,
    models,
    searching,
    workspaces,
)
from shipyard.server.workers.supervisor import Supervisor
from tests.fixtures import empty_database

CONFIG = load_config(
    "entrypoint: python3 train.py\nsearcher: {name: single, metric: loss, max_length: 4}"
).to_json_dict()


@pytest.fixture
def db(tmp_path):
    empty_database.copy_to(tmp_path / "shipyard.db")  # migrated once, a copy a test
    database = Database(f"sqlite:///{tmp_path / 'shipyard.db'}")
    yield database
    database.close()


def make(db: Database, tmp_path, *, state: str = "COMPLETED", trial_state: str = "COMPLETED"):
    """An experiment (owned by alice) with one trial and its checkpoints c1 (step 1) and c2
    (step 2, the trial's latest): their ids."""
    with db.write() as s:
        project = workspaces.default_project(session=s)
        exp = orm.Experiment(
            workspace_id=project.workspace_id,
            project_id=project.id,
            name="races",
            owner="alice",
            config=CONFIG,
            config_yaml="",
            state=state,
            seed=1,
            checkpoint_base=str(tmp_path / "checkpoints"),
            searcher_state={"state": None},
        )
        s.add(exp)
        s.flush()
        trial = orm.Trial(
            experiment_id=exp.id,
            workspace_id=exp.workspace_id,
            request_id="r0001",
            hparams={},
            seed=1,
            state=trial_state,
            run_id=1,
            latest_checkpoint="c2",
        )
        s.add(trial)
        s.flush()
        for step in (1, 2):
            s.add(
                orm.Checkpoint(
                    uuid=f"c{step}",
                    experiment_id=exp.id,
                    trial_id=trial.id,
                    workspace_id=exp.workspace_id,
                    run_id=1,
                    steps_completed=step,
                    storage_path=f"c{step}",
                    state=checkpoints.COMPLETED,
                )
            )
        return exp.id, trial.id


class Storage:
    """A checkpoint storage that notes what the database says while it deletes."""

    def __init__(self, db: Database, look, fails: bool) -> None:
        self.db, self.look, self.fails = db, look, fails
        self.seen: list[object] = []
        self.store = Prefixes()  # an experiment's delete removes its TensorBoard files by prefix

    def delete(self, uuid: str) -> None:
        with self.db.read() as s:
            self.seen.append(self.look(s, uuid))
        if self.fails:
            raise OSError("the storage is down")

    def writing(self) -> dict:
        return {}


class Prefixes:
    """The store under Storage: notes the prefixes deleted."""

    def __init__(self) -> None:
        self.deleted: list[str] = []

    def delete(self, prefix: str) -> None:
        self.deleted.append(prefix)


def audited(db: Database, action: str) -> list[orm.AuditEvent]:
    with db.read() as s:
        return [e for e in s.query(orm.AuditEvent) if e.action == action]


def test_a_checkpoint_is_deleted_in_the_record_before_its_files_and_kept_if_they_stay(
    db, tmp_path, monkeypatch
):
    _exp_id, trial_id = make(db, tmp_path)

    def look(s, uuid):
        return s.get(orm.Checkpoint, uuid).state, s.get(orm.Trial, trial_id).latest_checkpoint

    def find(s):
        return checkpoints.get("c2", session=s)

    failing = Storage(db, look, fails=True)
    monkeypatch.setattr(checkpoints, "storage_of", lambda ckpt, session: failing)
    with pytest.raises(Conflict, match="try again"):
        checkpoints.delete(db, "c2", find, actor="alice")
    # While its files went, nothing offered it (DELETED, the trial on its previous one)...
    assert failing.seen == [("DELETED", "c1")]
    # ... and as they stayed, it is back as it was, and nothing was audited.
    with db.read() as s:
        assert look(s, "c2") == ("COMPLETED", "c2")
    assert audited(db, "checkpoint.delete") == []

    working = Storage(db, look, fails=False)
    monkeypatch.setattr(checkpoints, "storage_of", lambda ckpt, session: working)
    checkpoints.delete(db, "c2", find, actor="alice", address="10.0.0.1")
    with db.read() as s:
        assert look(s, "c2") == ("DELETED", "c1")
    [event] = audited(db, "checkpoint.delete")
    assert (event.actor, event.target, event.address) == ("alice", "checkpoint:c2", "10.0.0.1")


def test_a_checkpoint_a_live_trial_resumes_from_is_refused_under_the_write(
    db, tmp_path, monkeypatch
):
    make(db, tmp_path, state="ACTIVE", trial_state="QUEUED")
    storage = Storage(db, lambda s, uuid: None, fails=False)
    monkeypatch.setattr(checkpoints, "storage_of", lambda ckpt, session: storage)
    with pytest.raises(Conflict, match="resumes from"):
        checkpoints.delete(db, "c2", lambda s: checkpoints.get("c2", session=s), actor="alice")
    assert storage.seen == []  # no file touched


def test_an_experiment_is_archived_before_its_files_go_so_it_cannot_be_continued(
    db, tmp_path, monkeypatch
):
    exp_id, _trial_id = make(db, tmp_path)

    def look(s, uuid):
        return s.get(orm.Experiment, exp_id).archived

    failing = Storage(db, look, fails=True)
    monkeypatch.setattr(experiment_records.checkpoint_storage, "storage_of", lambda exp: failing)
    with pytest.raises(experiment_records.CheckpointsNotDeleted):
        experiment_records.delete_experiment(
            db, exp_id, home=tmp_path, visible=None, grants=EVERYTHING, username="alice"
        )
    assert failing.seen == [True, True]  # archived before the first file went
    with db.write() as s:
        exp = s.get_one(orm.Experiment, exp_id)
        with pytest.raises(Conflict, match="archived"):
            experiment_continue.continue_(exp, ContinueExperimentRequest(max_length=8), session=s)
    assert audited(db, "experiment.delete") == []

    working = Storage(db, look, fails=False)
    monkeypatch.setattr(experiment_records.checkpoint_storage, "storage_of", lambda exp: working)
    deleted = experiment_records.delete_experiment(
        db, exp_id, home=tmp_path, visible=None, grants=EVERYTHING, username="bob"
    )
    assert deleted == 2
    [event] = audited(db, "experiment.delete")
    assert (event.actor, event.target) == ("bob", f"experiment:{exp_id}")
    assert event.detail["owner"] == "alice" and event.detail["checkpoints"] == 2


def test_continue_and_delete_wait_for_the_searcher_to_hear_the_last_exits(db, tmp_path):
    exp_id, trial_id = make(db, tmp_path, state="CANCELED", trial_state="CANCELED")
    with db.write() as s:
        s.add(
            orm.SearcherEvent(
                experiment_id=exp_id,
                trial_id=trial_id,
                kind="exit",
                payload={"request_id": "r0001", "reason": "CANCELED"},
                processed=False,
            )
        )
    with db.write() as s:
        exp = s.get_one(orm.Experiment, exp_id)
        with pytest.raises(Conflict, match="searcher has not yet processed"):
            experiment_continue.continue_(exp, ContinueExperimentRequest(max_length=8), session=s)
        with pytest.raises(Conflict, match="it can be deleted once"):
            experiment_records.require_trials_ended(exp, "deleted")
        for event in s.query(orm.SearcherEvent):
            event.processed = True
    with db.read() as s:
        experiment_records.require_trials_ended(s.get_one(orm.Experiment, exp_id), "continued")


def killed_and_running(db: Database, tmp_path) -> int:
    _exp_id, trial_id = make(db, tmp_path, state="ACTIVE", trial_state="RUNNING")
    with db.write() as s:
        trial = s.get_one(orm.Trial, trial_id)
        trial.exit_reason = "killed by alice"
        trial.stop_requested = True
        trial.stop_deadline = utcnow()
    return trial_id


def test_a_searchers_stop_does_not_undo_a_users_kill(db, tmp_path):
    trial_id = killed_and_running(db, tmp_path)
    with db.write() as s:
        trial = s.get_one(orm.Trial, trial_id)
        deadline = trial.stop_deadline
        searching.stop_trial(s, trial, "stopped by the searcher", 60)
    with db.read() as s:
        trial = s.get_one(orm.Trial, trial_id)
        assert (trial.exit_reason, trial.stop_deadline) == ("killed by alice", deadline)


def test_a_killed_trial_lost_in_a_master_restart_ends_killed(db, tmp_path):
    trial_id = killed_and_running(db, tmp_path)
    supervisor = SimpleNamespace(
        db=db,
        _find=lambda trial: None,  # its run is gone
        handles={},
        offsets={},
        run_secrets=SimpleNamespace(sweep=lambda handles: None),
    )
    Supervisor.recover(supervisor)  # type: ignore[arg-type]
    with db.read() as s:
        trial = s.get_one(orm.Trial, trial_id)
        assert (trial.state, trial.exit_reason) == ("CANCELED", "killed by alice")
        [told] = s.query(orm.SearcherEvent).all()
        assert told.payload["reason"] == "CANCELED"


def test_retention_skips_an_experiment_deleted_since_it_ended(db):
    assert checkpoint_gc.collect(db, 424242) == []


class Registering(Storage):
    """A checkpoint storage that, while it deletes a checkpoint's files, has someone
    register that checkpoint as a model version: what the master answered, per checkpoint."""

    def __init__(self, db: Database, fails: bool = False) -> None:
        super().__init__(db, look=None, fails=fails)
        self.answers: dict[str, str] = {}
        with db.write() as s:
            request = CreateModelRequest(name=f"m{id(self)}")
            self.model_id = models.create(
                request, grants=EVERYTHING, username="bob", visible=None, session=s
            ).id

    def delete(self, uuid: str) -> None:
        try:
            with self.db.write() as s:
                model = s.get_one(orm.Model, self.model_id)
                request = RegisterVersionRequest(checkpoint_uuid=uuid)
                models.register(
                    model, request, grants=EVERYTHING, username="bob", visible=None, session=s
                )
            self.answers[uuid] = "registered"
        except Conflict as exc:
            self.answers[uuid] = exc.message
        if self.fails:
            raise OSError("the storage is down")


def states(db: Database) -> dict[str, str]:
    with db.read() as s:
        return {c.uuid: c.state for c in s.query(orm.Checkpoint)}


def test_a_checkpoint_whose_files_go_cannot_be_registered_meanwhile(db, tmp_path, monkeypatch):
    exp_id, trial_id = make(db, tmp_path)
    # Retention (c1: not the trial's latest, no metric to keep it as a best).
    storage = Registering(db)
    monkeypatch.setattr(checkpoint_gc.checkpoint_storage, "storage_of", lambda exp: storage)
    assert checkpoint_gc.collect(db, exp_id, trial_id) == ["c1"]
    assert storage.answers == {
        "c1": "checkpoint c1 is DELETED: only a COMPLETED checkpoint can be registered"
    }
    assert states(db) == {"c1": "DELETED", "c2": "COMPLETED"}

    # A storage that does not open (a key's secret is gone): nothing is marked.
    def no_storage(exp):
        raise ShipyardError("no secret 'S3_KEY' in workspace 'Uncategorized'")

    monkeypatch.setattr(experiment_records.checkpoint_storage, "storage_of", no_storage)
    with pytest.raises(ShipyardError, match="S3_KEY"):
        experiment_records.delete_experiment(
            db, exp_id, home=tmp_path, visible=None, grants=EVERYTHING, username="alice"
        )
    assert states(db) == {"c1": "DELETED", "c2": "COMPLETED"}

    # The experiment's deletion, whose storage fails: c2 is COMPLETED again afterwards.
    failing = Registering(db, fails=True)
    monkeypatch.setattr(experiment_records.checkpoint_storage, "storage_of", lambda exp: failing)
    with pytest.raises(experiment_records.CheckpointsNotDeleted):
        experiment_records.delete_experiment(
            db, exp_id, home=tmp_path, visible=None, grants=EVERYTHING, username="alice"
        )
    assert failing.answers == {
        "c2": "checkpoint c2 is DELETED: only a COMPLETED checkpoint can be registered"
    }
    assert states(db) == {"c1": "DELETED", "c2": "COMPLETED"}

    # A version registered before the deletion keeps its checkpoint: the deletion is refused.
    with db.write() as s:
        model = s.get_one(orm.Model, failing.model_id)
        request = RegisterVersionRequest(checkpoint_uuid="c2")
        models.register(model, request, grants=EVERYTHING, username="bob", visible=None, session=s)
    with pytest.raises(Conflict, match="c2 is model version"):
        experiment_records.delete_experiment(
            db, exp_id, home=tmp_path, visible=None, grants=EVERYTHING, username="alice"
        )
    assert states(db) == {"c1": "DELETED", "c2": "COMPLETED"}
