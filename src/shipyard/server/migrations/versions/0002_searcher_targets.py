"""searcher targets: what adaptive searchers need on a trial

Revision ID: 0002
Revises: 0001
"""

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("trials") as batch:
        batch.add_column(sa.Column("target_length", sa.BigInteger(), nullable=True))
        batch.add_column(sa.Column("searcher_time", sa.Float(), nullable=True))
        batch.add_column(
            sa.Column(
                "waiting_for_searcher", sa.Boolean(), nullable=False, server_default=sa.false()
            )
        )
        batch.add_column(sa.Column("stop_deadline", sa.DateTime(timezone=True), nullable=True))
        batch.add_column(sa.Column("parent_trial_id", sa.Integer(), nullable=True))
        batch.add_column(sa.Column("searcher_info", sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("trials") as batch:
        for column in (
            "searcher_info",
            "parent_trial_id",
            "stop_deadline",
            "waiting_for_searcher",
            "searcher_time",
            "target_length",
        ):
            batch.drop_column(column)
