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
