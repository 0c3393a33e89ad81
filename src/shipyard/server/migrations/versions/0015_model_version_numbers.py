"""models.last_version: the highest version number a model has given, so that a deleted
version's number is never given again (a model URI NAME/3 names one checkpoint for good).

Revision ID: 0015
Revises: 0014
"""

import sqlalchemy as sa
from alembic import op

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("models") as batch:
        batch.add_column(
            sa.Column("last_version", sa.Integer(), nullable=False, server_default="0")
        )
    op.execute(
        "UPDATE models SET last_version = COALESCE("
        "(SELECT MAX(version) FROM model_versions WHERE model_versions.model_id = models.id), 0)"
    )


def downgrade() -> None:
    with op.batch_alter_table("models") as batch:
        batch.drop_column("last_version")
