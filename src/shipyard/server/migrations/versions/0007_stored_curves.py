"""stored_curves: ended trials' downsampled curves; trials.metrics_version to tell a
curve computed from older points

Revision ID: 0007
Revises: 0006
"""

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("trials") as batch:
        batch.add_column(
            sa.Column("metrics_version", sa.Integer(), nullable=False, server_default="0")
        )
    op.create_table(
        "stored_curves",
        sa.Column("trial_id", sa.Integer(), nullable=False),
        sa.Column("key_id", sa.Integer(), nullable=False),
        sa.Column("max_points", sa.Integer(), nullable=False),
        sa.Column("metrics_version", sa.Integer(), nullable=False),
        sa.Column("steps_json", sa.Text(), nullable=False),
        sa.Column("values_json", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("trial_id", "key_id", "max_points"),
    )


def downgrade() -> None:
    op.drop_table("stored_curves")
    with op.batch_alter_table("trials") as batch:
        batch.drop_column("metrics_version")
