"""workspaces and projects as objects, groups, role bindings, quotas and secrets; every
experiment gets its project's row, admins become cluster-admin role bindings

Revision ID: 0010
Revises: 0009
"""

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None

DEFAULT = "Uncategorized"  # the config's default workspace and project (Determined's)


def upgrade() -> None:
    with op.batch_alter_table("workspaces") as batch:
        batch.add_column(
            sa.Column("archived", sa.Boolean(), nullable=False, server_default=sa.false())
        )
        batch.add_column(sa.Column("max_slots", sa.Integer(), nullable=True))
        batch.add_column(sa.Column("max_trials", sa.Integer(), nullable=True))
    op.create_table(
        "projects",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("workspace_id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=128), nullable=False),
        sa.Column("description", sa.Text(), nullable=False),
        sa.Column("archived", sa.Boolean(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["workspace_id"], ["workspaces.id"]),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("workspace_id", "name"),
    )
    op.create_index("ix_projects_workspace_id", "projects", ["workspace_id"])
    _projects_from_experiments()
    with op.batch_alter_table("experiments") as batch:
        batch.create_index("ix_experiments_workspace_id", ["workspace_id"])
        batch.create_index("ix_experiments_project_id", ["project_id"])
        batch.create_foreign_key("fk_experiments_project_id", "projects", ["project_id"], ["id"])
        batch.alter_column("project_id", existing_type=sa.Integer(), nullable=False)
        batch.drop_column("project")
    op.create_table(
        "groups",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=128), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("name"),
    )
    op.create_table(
        "group_members",
        sa.Column("group_id", sa.Integer(), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(["group_id"], ["groups.id"]),
        sa.ForeignKeyConstraint(["user_id"], ["users.id"]),
        sa.PrimaryKeyConstraint("group_id", "user_id"),
    )
    op.create_index("ix_group_members_user_id", "group_members", ["user_id"])
    op.create_table(
        "role_bindings",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("role", sa.String(length=32), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=True),
        sa.Column("group_id", sa.Integer(), nullable=True),
        sa.Column("workspace_id", sa.Integer(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["user_id"], ["users.id"]),
        sa.ForeignKeyConstraint(["group_id"], ["groups.id"]),
        sa.ForeignKeyConstraint(["workspace_id"], ["workspaces.id"]),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_role_bindings_user_id", "role_bindings", ["user_id"])
    op.create_index("ix_role_bindings_group_id", "role_bindings", ["group_id"])
    # Admins keep what they could do; every other user keeps what they could do before
    # workspaces had members (see and submit in every one), as an editor of each.
    op.execute(
        "INSERT INTO role_bindings (role, user_id, group_id, workspace_id, created_at) "
        "SELECT 'cluster_admin', id, NULL, NULL, CURRENT_TIMESTAMP FROM users WHERE is_admin"
    )
    op.execute(
        "INSERT INTO role_bindings (role, user_id, group_id, workspace_id, created_at) "
        "SELECT 'editor', users.id, NULL, workspaces.id, CURRENT_TIMESTAMP "
        "FROM users, workspaces WHERE NOT users.is_admin AND NOT users.is_service"
    )
    with op.batch_alter_table("users") as batch:
        batch.drop_column("is_admin")
    op.create_table(
        "secrets",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("workspace_id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=128), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("key_id", sa.String(length=32), nullable=False),
        sa.Column("nonce", sa.LargeBinary(), nullable=False),
        sa.Column("ciphertext", sa.LargeBinary(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_by", sa.String(length=128), nullable=False),
        sa.ForeignKeyConstraint(["workspace_id"], ["workspaces.id"]),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("workspace_id", "name"),
    )


def _projects_from_experiments() -> None:
    """The default workspace and its default project exist; each (workspace, project name)
    an experiment named becomes a project row, and every workspace has a default project
    (the config's default project name)."""
    op.execute(
        "INSERT INTO workspaces (name, created_at, archived) "
        f"SELECT '{DEFAULT}', CURRENT_TIMESTAMP, false WHERE NOT EXISTS "
        f"(SELECT 1 FROM workspaces WHERE name = '{DEFAULT}')"
    )
    op.execute(
        "INSERT INTO projects (workspace_id, name, description, archived, created_at) "
        "SELECT DISTINCT workspace_id, project, '', false, CURRENT_TIMESTAMP FROM experiments"
    )
    op.execute(
        "INSERT INTO projects (workspace_id, name, description, archived, created_at) "
        f"SELECT id, '{DEFAULT}', '', false, CURRENT_TIMESTAMP FROM workspaces w "
        "WHERE NOT EXISTS (SELECT 1 FROM projects p "
        f"WHERE p.workspace_id = w.id AND p.name = '{DEFAULT}')"
    )
    with op.batch_alter_table("experiments") as batch:
        batch.add_column(sa.Column("project_id", sa.Integer(), nullable=True))
    op.execute(
        "UPDATE experiments SET project_id = (SELECT p.id FROM projects p "
        "WHERE p.workspace_id = experiments.workspace_id AND p.name = experiments.project)"
    )


def downgrade() -> None:
    op.drop_table("secrets")
    with op.batch_alter_table("users") as batch:
        batch.add_column(
            sa.Column("is_admin", sa.Boolean(), nullable=False, server_default=sa.false())
        )
    op.execute(
        "UPDATE users SET is_admin = true WHERE id IN (SELECT user_id FROM role_bindings "
        "WHERE role = 'cluster_admin' AND workspace_id IS NULL)"
    )
    op.drop_table("role_bindings")
    op.drop_table("group_members")
    op.drop_table("groups")
    with op.batch_alter_table("experiments") as batch:
        batch.add_column(sa.Column("project", sa.String(length=128), nullable=True))
    op.execute(
        "UPDATE experiments SET project = "
        "(SELECT name FROM projects WHERE projects.id = experiments.project_id)"
    )
    with op.batch_alter_table("experiments") as batch:
        batch.drop_constraint("fk_experiments_project_id", type_="foreignkey")
        batch.drop_index("ix_experiments_project_id")
        batch.drop_index("ix_experiments_workspace_id")
        batch.drop_column("project_id")
    op.drop_table("projects")
    with op.batch_alter_table("workspaces") as batch:
        batch.drop_column("max_trials")
        batch.drop_column("max_slots")
        batch.drop_column("archived")
