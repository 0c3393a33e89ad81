"""trial runs: every launch of a trial and how it ended

Revision ID: 0003
Revises: 0002
"""

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "trial_runs",
        sa.Column("trial_id", sa.Integer(), nullable=False),
        sa.Column("run_id", sa.Integer(), nullable=False),
        sa.Column("slots", sa.JSON(), nullable=False),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("ended_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("ended_how", sa.Text(), nullable=True),
        sa.ForeignKeyConstraint(["trial_id"], ["trials.id"]),
        sa.PrimaryKeyConstraint("trial_id", "run_id"),
    )


def downgrade() -> None:
    op.drop_table("trial_runs")
