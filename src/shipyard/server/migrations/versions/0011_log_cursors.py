"""log_cursors: how many lines of a run's output from each node the master has stored, for
runs that send their output over HTTP (a batch sent again is stored once)

Revision ID: 0011
Revises: 0010
"""

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "log_cursors",
        sa.Column("trial_id", sa.Integer(), nullable=False),
        sa.Column("run_id", sa.Integer(), nullable=False),
        sa.Column("source", sa.Integer(), nullable=False),
        sa.Column("lines", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("trial_id", "run_id", "source"),
    )


def downgrade() -> None:
    op.drop_table("log_cursors")
