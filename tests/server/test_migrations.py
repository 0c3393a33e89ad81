"""The Alembic migrations build exactly the schema the ORM describes, so a database made
by `shipyard up` (or upgraded from an older version) has every column the code uses."""

from __future__ import annotations

import uuid

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import create_engine

from shipyard.server import orm
from shipyard.server.db import Database


def test_migrated_sqlite_schema_matches_the_orm(tmp_path):
    db = Database(f"sqlite:///{tmp_path / 'shipyard.db'}")
    db.migrate()
    with db.engine.connect() as conn:
        diff = compare_metadata(MigrationContext.configure(conn), orm.Base.metadata)
    db.close()
    assert diff == []


def test_head_revision_names_the_newest_migration(tmp_path):
    from alembic.config import Config
    from alembic.script import ScriptDirectory

    from shipyard.server.db import HEAD_REVISION, MIGRATIONS

    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    assert ScriptDirectory.from_config(cfg).get_current_head() == HEAD_REVISION
    # and a database at an older revision is still upgraded
    from alembic import command

    db = Database(f"sqlite:///{tmp_path / 'old.db'}")
    db.migrate()
    with db.engine.begin() as conn:
        cfg.attributes["connection"] = conn
        command.downgrade(cfg, "0003")
    db.migrate()
    with db.engine.connect() as conn:
        columns = [row[1] for row in conn.exec_driver_sql("PRAGMA table_info(trials)")]
    db.close()
    assert "run_error" in columns


def test_owners_stored_before_users_existed_become_users_who_cannot_log_in(tmp_path):
    """Migration 0009: each owner name becomes a user without a password, once."""
    from alembic import command
    from alembic.config import Config
    from sqlalchemy import select

    from shipyard.server.db import MIGRATIONS
    from shipyard.server.services import users as user_service

    db = Database(f"sqlite:///{tmp_path / 'old.db'}")
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    with db.engine.begin() as conn:
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, "0008")
        conn.exec_driver_sql(
            "INSERT INTO workspaces (id, name, created_at) VALUES (1, 'w', '2026-01-01')"
        )
        for i, owner in enumerate(["ada", "grace", "ada", None]):
            conn.exec_driver_sql(
                "INSERT INTO experiments (workspace_id, project, name, description, labels, config,"
                " config_yaml, state, seed, checkpoint_base, priority, searcher_done, progress,"
                " created_at, owner) VALUES (1, 'p', ?, '', '[]', '{}', '', 'COMPLETED', 1, '/c',"
                " 42, 1, 1.0, '2026-01-01', ?)",
                (f"e{i}", owner),
            )
    db.migrate()
    with db.read() as s:
        users = [
            (u.username, u.password_hash, user_service.is_admin(u, session=s))
            for u in s.scalars(select(orm.User))
        ]
    db.close()
    assert sorted(users) == [("ada", None, False), ("grace", None, False)]


CONFIG = '{"entrypoint": "python3 t.py", "searcher": {"name": "single", "metric": "loss"}}'


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def empty_db_url(request, tmp_path) -> str:
    """A database with no table yet: a file, or a new database in the session's cluster."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'old.db'}"
    server = request.getfixturevalue("postgres_url")
    name = f"migrations_{uuid.uuid4().hex[:12]}"
    engine = create_engine(server, isolation_level="AUTOCOMMIT")
    with engine.connect() as conn:
        conn.exec_driver_sql(f"CREATE DATABASE {name}")
    engine.dispose()
    return server.rsplit("/", 1)[0] + "/" + name


def test_workspaces_and_projects_become_objects_and_admins_become_role_bindings(empty_db_url):
    """Migration 0010: every experiment gets its (workspace, project) row, every workspace
    a default project; an admin becomes a cluster admin by role binding and every other
    user an editor of each workspace, as before (nobody sees less)."""
    from alembic import command
    from alembic.config import Config
    from sqlalchemy import select, text

    from shipyard.server.db import MIGRATIONS
    from shipyard.server.services import rbac, users, views

    db = Database(empty_db_url)
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    with db.engine.begin() as conn:
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, "0009")
        conn.execute(
            text("INSERT INTO workspaces (name, created_at) VALUES ('research', :at)"),
            {"at": "2026-01-01"},
        )
        research = conn.execute(text("SELECT id FROM workspaces")).scalar_one()
        for name, project in [("e1", "cifar"), ("e2", "cifar"), ("e3", "mnist")]:
            conn.execute(
                text(
                    "INSERT INTO experiments (workspace_id, project, name, description, labels,"
                    " config, config_yaml, state, seed, checkpoint_base, priority, searcher_done,"
                    " progress, created_at, owner) VALUES (:ws, :project, :name, '', '[]', :config,"
                    " '', 'COMPLETED', 1, '/c', 42, true, 1.0, :at, 'ada')"
                ),
                {"ws": research, "project": project, "name": name, "config": CONFIG}
                | {"at": "2026-01-01"},
            )
        for name, admin in [("root", True), ("ada", False)]:
            conn.execute(
                text(
                    "INSERT INTO users (username, is_admin, is_service, active, created_at)"
                    " VALUES (:name, :admin, false, true, :at)"
                ),
                {"name": name, "admin": admin, "at": "2026-01-01"},
            )
    db.migrate()
    with db.read() as s:
        places = {
            e.name: (s.get_one(orm.Project, e.project_id).name, e.workspace_id)
            for e in s.scalars(select(orm.Experiment))
        }
        projects = sorted(
            (ws, p)
            for ws, p in s.execute(
                select(orm.Workspace.name, orm.Project.name).join(
                    orm.Workspace, orm.Workspace.id == orm.Project.workspace_id
                )
            )
        )
        root, ada = (users.get(n, session=s) for n in ("root", "ada"))
        root_grants, ada_grants = (rbac.grants_of(u.id, session=s) for u in (root, ada))
        summary = views.experiment_summaries(list(s.scalars(select(orm.Experiment))), session=s)
    db.close()
    assert places == {
        "e1": ("cifar", research),
        "e2": ("cifar", research),
        "e3": ("mnist", research),
    }
    assert projects == [
        ("Uncategorized", "Uncategorized"),
        ("research", "Uncategorized"),
        ("research", "cifar"),
        ("research", "mnist"),
    ]
    assert root_grants.workspaces() is None  # a cluster admin sees every workspace
    assert ada_grants.workspaces() is not None and research in ada_grants.workspaces()
    assert {(e.workspace, e.project) for e in summary} == {
        ("research", "cifar"),
        ("research", "mnist"),
    }


def test_a_deleted_newest_experiments_ids_are_never_given_again(tmp_path):
    """Migration 0013 on a database with rows: they are kept, the schema is the ORM's, and
    once the newest experiment and its trial are deleted the next ones get new ids (a
    trial's task token is keyed by its id)."""
    db = database_at(tmp_path / "old.db", "0012")

    def add_experiment_and_trial(conn) -> tuple[int, int]:
        exp_id = add_ended_experiment(conn)
        conn.exec_driver_sql(
            "INSERT INTO trials (experiment_id, workspace_id, request_id, hparams, seed, state,"
            " restarts, run_id, stop_requested, preempt_requested, steps_completed, slots,"
            " log_offset, log_lines, waiting_for_searcher, metrics_version)"
            " VALUES (?, 1, 'r', '{}', 1, 'COMPLETED', 0, 1, 0, 0, 0, '[]', 0, 0, 0, 0)",
            (exp_id,),
        )
        return exp_id, conn.exec_driver_sql("SELECT max(id) FROM trials").scalar()

    with db.engine.begin() as conn:
        kept = add_experiment_and_trial(conn)
        newest = add_experiment_and_trial(conn)
    db.migrate()
    with db.engine.begin() as conn:
        assert conn.exec_driver_sql("SELECT id FROM experiments").scalars().all() == [
            kept[0],
            newest[0],
        ]
        conn.exec_driver_sql("DELETE FROM trials WHERE id = ?", (newest[1],))
        conn.exec_driver_sql("DELETE FROM experiments WHERE id = ?", (newest[0],))
        again = add_experiment_and_trial(conn)
    with db.engine.connect() as conn:
        diff = compare_metadata(MigrationContext.configure(conn), orm.Base.metadata)
    db.close()
    assert again[0] > newest[0] and again[1] > newest[1]
    assert diff == []


def test_a_models_highest_version_is_kept_by_migration_0015(tmp_path):
    """Models made before 0015 get last_version from their versions, so a version deleted
    afterwards does not give its number again."""
    db = database_at(tmp_path / "old.db", "0014")
    with db.engine.begin() as conn:
        add_ended_experiment(conn)
        for uuid_ in ("c1", "c2", "c3"):
            conn.exec_driver_sql(
                "INSERT INTO checkpoints (uuid, experiment_id, trial_id, workspace_id, run_id,"
                " steps_completed, storage_path, state, resources, metadata, size, created_at)"
                " VALUES (?, 1, 1, 1, 1, 1, ?, 'COMPLETED', '{}', '{}', 0, '2026-01-01')",
                (uuid_, uuid_),
            )
        for model_id, name in ((1, "three"), (2, "none")):
            conn.exec_driver_sql(
                "INSERT INTO models (id, workspace_id, name, description, tags, archived,"
                " created_at) VALUES (?, 1, ?, '', '[]', 0, '2026-01-01')",
                (model_id, name),
            )
        for version, uuid_ in ((1, "c1"), (2, "c2"), (3, "c3")):
            conn.exec_driver_sql(
                "INSERT INTO model_versions (model_id, version, checkpoint_uuid, description,"
                " tags, created_at) VALUES (1, ?, ?, '', '[]', '2026-01-01')",
                (version, uuid_),
            )
    db.migrate()
    with db.engine.connect() as conn:
        found = dict(conn.exec_driver_sql("SELECT name, last_version FROM models").all())
        diff = compare_metadata(MigrationContext.configure(conn), orm.Base.metadata)
    db.close()
    assert found == {"three": 3, "none": 0}
    assert diff == []


def add_ended_experiment(conn) -> int:
    """A COMPLETED experiment's row, as the migrations' tests' older schemas take it."""
    conn.exec_driver_sql(
        "INSERT INTO experiments (workspace_id, project_id, name, description, labels,"
        " config, config_yaml, state, seed, checkpoint_base, priority, searcher_done,"
        " progress, created_at, archived) VALUES (1, 1, 'e', '', '[]', '{}', '',"
        " 'COMPLETED', 1, '/c', 42, 1, 1.0, '2026-01-01', 0)"
    )
    return conn.exec_driver_sql("SELECT max(id) FROM experiments").scalar()


def database_at(path, revision: str) -> Database:
    """A SQLite database migrated to the head, then down to ``revision``."""
    from alembic import command
    from alembic.config import Config

    from shipyard.server.db import MIGRATIONS

    db = Database(f"sqlite:///{path}")
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    db.migrate()
    with db.engine.begin() as conn:
        cfg.attributes["connection"] = conn
        command.downgrade(cfg, revision)
    return db
