"""experiments and trials on SQLite: AUTOINCREMENT, so the id of a deleted experiment (and
of its trials) is never given again. `experiment delete` removes the rows; SQLite's plain
rowid would hand the newest ids out once more, and a trial's task token is keyed by its id.
PostgreSQL's sequences never reuse a value: nothing to do there.

Revision ID: 0013
Revises: 0012
"""

from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None

TABLES = ("experiments", "trials")


def upgrade() -> None:
    if op.get_bind().dialect.name != "sqlite":
        return
    # Rebuilt with their rows; SQLite starts each sequence at the largest id copied.
    for table in TABLES:
        with op.batch_alter_table(
            table, recreate="always", table_kwargs={"sqlite_autoincrement": True}
        ):
            pass


def downgrade() -> None:
    if op.get_bind().dialect.name != "sqlite":
        return
    for table in TABLES:
        with op.batch_alter_table(
            table, recreate="always", table_kwargs={"sqlite_autoincrement": False}
        ):
            pass
