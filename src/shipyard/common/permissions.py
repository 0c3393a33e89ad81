"""Roles and what each may do: the one table the master checks (server/auth/permissions.py),
the docs page (docs/permissions.md, written by `python -m shipyard.common.permissions`),
`shipyard role permissions` and the role-matrix test are all made from.

A role is bound to a user or a group, in one workspace or at cluster scope (in every
workspace, and over the cluster's own objects: users, groups, quotas, audit, keys)."""

from __future__ import annotations

import sys
from enum import StrEnum


class Role(StrEnum):
    VIEWER = "viewer"
    EDITOR = "editor"
    WORKSPACE_ADMIN = "workspace_admin"
    CLUSTER_ADMIN = "cluster_admin"


class Action(StrEnum):
    # In a workspace: a role bound there or at cluster scope.
    VIEW = "view"
    CREATE_EXPERIMENT = "create_experiment"
    EDIT_OWN_EXPERIMENT = "edit_own_experiment"
    EDIT_ANY_EXPERIMENT = "edit_any_experiment"
    CREATE_PROJECT = "create_project"
    EDIT_PROJECT = "edit_project"
    EDIT_WORKSPACE = "edit_workspace"
    ASSIGN_WORKSPACE_ROLES = "assign_workspace_roles"
    USE_SECRETS = "use_secrets"
    WRITE_SECRETS = "write_secrets"
    # Over the cluster: a role bound at cluster scope only.
    CREATE_WORKSPACE = "create_workspace"
    SET_QUOTAS = "set_quotas"
    MANAGE_USERS = "manage_users"
    MANAGE_GROUPS = "manage_groups"
    ASSIGN_CLUSTER_ROLES = "assign_cluster_roles"
    READ_AUDIT_LOG = "read_audit_log"
    ROTATE_KEYS = "rotate_keys"


CLUSTER_ACTIONS = frozenset(
    {
        Action.CREATE_WORKSPACE,
        Action.SET_QUOTAS,
        Action.MANAGE_USERS,
        Action.MANAGE_GROUPS,
        Action.ASSIGN_CLUSTER_ROLES,
        Action.READ_AUDIT_LOG,
        Action.ROTATE_KEYS,
    }
)

DESCRIPTIONS: dict[Action, str] = {
    Action.VIEW: "see the workspace, its projects, experiments, trials, metrics, logs, "
    "checkpoints, jobs, secret names and role bindings",
    Action.CREATE_EXPERIMENT: "submit experiments to the workspace's projects (and fork "
    "there any experiment one sees)",
    Action.EDIT_OWN_EXPERIMENT: "pause, activate, kill, continue, archive, move, delete, "
    "rename, describe, label or change the resources of an experiment one submitted",
    Action.EDIT_ANY_EXPERIMENT: "the same on every experiment of the workspace",
    Action.CREATE_PROJECT: "create projects in the workspace",
    Action.EDIT_PROJECT: "rename, describe, archive and unarchive the workspace's projects",
    Action.EDIT_WORKSPACE: "rename, archive and unarchive the workspace",
    Action.ASSIGN_WORKSPACE_ROLES: "give and take roles in the workspace (up to workspace admin)",
    Action.USE_SECRETS: "name the workspace's secrets in an experiment config",
    Action.WRITE_SECRETS: "set and delete the workspace's secrets (values are never read back)",
    Action.CREATE_WORKSPACE: "create workspaces",
    Action.SET_QUOTAS: "set a workspace's quotas of slots and running trials",
    Action.MANAGE_USERS: "create, deactivate and activate users, set anyone's password, "
    "make and revoke anyone's tokens",
    Action.MANAGE_GROUPS: "create and delete groups, add and remove members",
    Action.ASSIGN_CLUSTER_ROLES: "give and take roles at cluster scope",
    Action.READ_AUDIT_LOG: "read the audit log",
    Action.ROTATE_KEYS: "re-encrypt every secret under a new key",
}

_VIEWER = frozenset({Action.VIEW})
_EDITOR = _VIEWER | {
    Action.CREATE_EXPERIMENT,
    Action.EDIT_OWN_EXPERIMENT,
    Action.CREATE_PROJECT,
    Action.USE_SECRETS,
}
_WORKSPACE_ADMIN = _EDITOR | {
    Action.EDIT_ANY_EXPERIMENT,
    Action.EDIT_PROJECT,
    Action.EDIT_WORKSPACE,
    Action.ASSIGN_WORKSPACE_ROLES,
    Action.WRITE_SECRETS,
}

PERMISSIONS: dict[Role, frozenset[Action]] = {
    Role.VIEWER: _VIEWER,
    Role.EDITOR: _EDITOR,
    Role.WORKSPACE_ADMIN: _WORKSPACE_ADMIN,
    Role.CLUSTER_ADMIN: frozenset(Action),
}


def roles_allowed(action: Action) -> str:
    """The roles that may do `action`, for a message: "editor, workspace_admin, ..."."""
    return ", ".join(role.value for role in Role if action in PERMISSIONS[role])


def markdown() -> str:
    """docs/permissions.md: the table above as a page."""
    roles = list(Role)
    lines = [
        "# Roles and permissions",
        "",
        "Generated from `src/shipyard/common/permissions.py` by",
        "`python -m shipyard.common.permissions > docs/permissions.md`; a test checks",
        "that this page and the code agree. Do not edit it by hand.",
        "",
        "A role is bound to a user or a group (`shipyard role assign`), in one workspace or",
        "at cluster scope, where it holds in every workspace. The cluster actions (the",
        "second part of the table) come only from a role bound at cluster scope. An",
        "object in a workspace where you hold no role answers 404, as if it did not",
        "exist, and lists and counts leave it out.",
        "",
        "| Action | What it allows | " + " | ".join(r.value for r in roles) + " |",
        "|---|---|" + "---|" * len(roles),
    ]
    for action in Action:
        marks = " | ".join("yes" if action in PERMISSIONS[r] else "" for r in roles)
        scope = " (cluster)" if action in CLUSTER_ACTIONS else ""
        lines.append(f"| `{action.value}`{scope} | {DESCRIPTIONS[action]} | {marks} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.stdout.write(markdown())
