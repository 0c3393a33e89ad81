"""The Alembic migrations build exactly the schema the ORM describes, so a database made
by `shipyard up` (or upgraded from an older version) has every column the code uses."""

from __future__ import annotations

from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext

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
        users = s.execute(
            select(orm.User.username, orm.User.password_hash, orm.User.is_admin)
        ).all()
    db.close()
    assert sorted(users) == [("ada", None, False), ("grace", None, False)]
