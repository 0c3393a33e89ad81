"""What each run ran: experiments.code (what git said at submit), run_environments (the
environment each rank of each run captured at its start), and a rerun's experiment:
experiments.rerun_of (the trial it runs again) and experiments.trial_seed (that trial's
seed, which its one trial gets); artifacts (files a trial keeps beside its metrics); and the
model registry: models, model_versions (immutable, each a checkpoint) and model_aliases

Revision ID: 0014
Revises: 0013
"""

import sqlalchemy as sa
from alembic import op

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("experiments") as batch:
        batch.add_column(sa.Column("code", sa.JSON(), nullable=True))
        batch.add_column(sa.Column("rerun_of", sa.Integer(), nullable=True))
        batch.add_column(sa.Column("trial_seed", sa.BigInteger(), nullable=True))
    op.create_table(
        "run_environments",
        sa.Column("trial_id", sa.Integer(), nullable=False),
        sa.Column("run_id", sa.Integer(), nullable=False),
        sa.Column("rank", sa.Integer(), nullable=False),
        sa.Column("record", sa.JSON(), nullable=False),
        sa.Column("received_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("trial_id", "run_id", "rank"),
    )
    op.create_table(
        "artifacts",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("experiment_id", sa.Integer(), nullable=False),
        sa.Column("trial_id", sa.Integer(), nullable=False),
        sa.Column("run_id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(256), nullable=False),
        sa.Column("steps_completed", sa.BigInteger(), nullable=True),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("media_type", sa.String(128), nullable=False),
        sa.Column("size", sa.BigInteger(), nullable=False),
        sa.Column("sha256", sa.String(64), nullable=False),
        sa.Column("storage_path", sa.Text(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.UniqueConstraint("trial_id", "name", "steps_completed"),
    )
    op.create_index("ix_artifacts_trial_id", "artifacts", ["trial_id"])
    op.create_table(
        "models",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("workspace_id", sa.Integer(), sa.ForeignKey("workspaces.id"), nullable=False),
        sa.Column("name", sa.String(256), nullable=False),
        sa.Column("description", sa.Text(), nullable=False, server_default=""),
        sa.Column("tags", sa.JSON(), nullable=False),
        sa.Column("archived", sa.Boolean(), nullable=False, server_default=sa.false()),
        sa.Column("owner", sa.String(128), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.UniqueConstraint("workspace_id", "name"),
    )
    op.create_table(
        "model_versions",
        sa.Column("model_id", sa.Integer(), sa.ForeignKey("models.id"), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column(
            "checkpoint_uuid", sa.String(64), sa.ForeignKey("checkpoints.uuid"), nullable=False
        ),
        sa.Column("description", sa.Text(), nullable=False, server_default=""),
        sa.Column("tags", sa.JSON(), nullable=False),
        sa.Column("created_by", sa.String(128), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("model_id", "version"),
    )
    op.create_index("ix_model_versions_checkpoint_uuid", "model_versions", ["checkpoint_uuid"])
    op.create_table(
        "model_aliases",
        sa.Column("model_id", sa.Integer(), sa.ForeignKey("models.id"), nullable=False),
        sa.Column("alias", sa.String(64), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("model_id", "alias"),
    )


def downgrade() -> None:
    op.drop_table("model_aliases")
    op.drop_index("ix_model_versions_checkpoint_uuid", "model_versions")
    op.drop_table("model_versions")
    op.drop_table("models")
    op.drop_index("ix_artifacts_trial_id", "artifacts")
    op.drop_table("artifacts")
    op.drop_table("run_environments")
    with op.batch_alter_table("experiments") as batch:
        batch.drop_column("trial_seed")
        batch.drop_column("rerun_of")
        batch.drop_column("code")
