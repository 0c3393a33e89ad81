"""Retention never deletes a checkpoint a live trial will resume from, even one another
trial stored: a PBT child starts from its parent's checkpoint of a past round."""

from __future__ import annotations

from datetime import timedelta

from shipyard.common.config import load_config
from shipyard.server import orm
from shipyard.server.db import Database
from shipyard.server.orm import utcnow
from shipyard.server.services import workspaces
from shipyard.server.services.checkpoints import select_for_deletion


def test_a_childs_starting_checkpoint_outlives_its_parent(tmp_path):
    db = Database(f"sqlite:///{tmp_path / 'shipyard.db'}")
    db.migrate()
    with db.write() as s:
        project = workspaces.default_project(session=s)
        exp = orm.Experiment(
            workspace_id=project.workspace_id,
            project_id=project.id,
            name="pbt",
            config=load_config(
                "entrypoint: python3 pbt.py\nsearcher: {name: single, metric: loss}"
            ).to_json_dict(),
            config_yaml="",
            state="ACTIVE",
            seed=1,
            checkpoint_base=str(tmp_path),
        )
        s.add(exp)
        s.flush()

        def trial(request_id: str, state: str, **fields) -> orm.Trial:
            row = orm.Trial(
                experiment_id=exp.id,
                workspace_id=project.workspace_id,
                request_id=request_id,
                hparams={},
                seed=1,
                state=state,
                **fields,
            )
            s.add(row)
            s.flush()
            return row

        parent = trial("r0001", "COMPLETED", latest_checkpoint="round-3")
        for step, uuid in ((10, "round-1"), (20, "round-2"), (30, "round-3")):
            s.add(
                orm.Checkpoint(
                    uuid=uuid,
                    experiment_id=exp.id,
                    trial_id=parent.id,
                    workspace_id=project.workspace_id,
                    run_id=1,
                    steps_completed=step,
                    storage_path=uuid,
                    created_at=utcnow() + timedelta(seconds=step),
                )
            )
        trial("r0005", "QUEUED", latest_checkpoint="round-2", parent_trial_id=parent.id)
        s.flush()
        doomed = {c.uuid for c in select_for_deletion(exp, trial_id=parent.id, session=s)}
    db.close()
    # save_trial_latest 1 keeps round-3; round-2 is the queued child's start; round-1 goes.
    assert doomed == {"round-1"}
