"""resource pools, heartbeats and run errors

Revision ID: 0004
Revises: 0003
"""

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("experiments") as batch:
        batch.add_column(
            sa.Column("resource_pool", sa.String(64), nullable=False, server_default="default")
        )
    with op.batch_alter_table("trials") as batch:
        batch.add_column(sa.Column("last_heartbeat", sa.DateTime(timezone=True), nullable=True))
        batch.add_column(sa.Column("run_error", sa.Text(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("trials") as batch:
        batch.drop_column("run_error")
        batch.drop_column("last_heartbeat")
    with op.batch_alter_table("experiments") as batch:
        batch.drop_column("resource_pool")
