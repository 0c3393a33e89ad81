"""What a principal may do: its roles by workspace, checked against the one table in
shipyard.common.permissions."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from shipyard.common.errors import Forbidden
from shipyard.common.permissions import (
    CLUSTER_ACTIONS,
    DESCRIPTIONS,
    PERMISSIONS,
    Action,
    Role,
    roles_allowed,
)

__all__ = ["CLUSTER_ACTIONS", "EVERYTHING", "PERMISSIONS", "Action", "Grants", "Role"]


@dataclass(frozen=True)
class Grants:
    """A principal's roles: by workspace id, and None for cluster scope."""

    roles: Mapping[int | None, frozenset[Role]]

    @property
    def cluster_wide(self) -> frozenset[Role]:
        return self.roles.get(None, frozenset())

    def workspaces(self) -> frozenset[int] | None:
        """The workspaces the principal sees; None: every one (a cluster-scope role)."""
        if self.cluster_wide:
            return None
        return frozenset(ws for ws, roles in self.roles.items() if ws is not None and roles)

    def allows(self, action: Action, workspace_id: int | None = None) -> bool:
        held = set(self.cluster_wide)
        if action not in CLUSTER_ACTIONS and workspace_id is not None:
            held |= self.roles.get(workspace_id, frozenset())
        return any(action in PERMISSIONS[role] for role in held)

    def require(self, action: Action, workspace_id: int | None = None, what: str = "") -> None:
        if self.allows(action, workspace_id):
            return
        if action in CLUSTER_ACTIONS:
            raise Forbidden(f"only a cluster admin may do this: {DESCRIPTIONS[action]}")
        raise Forbidden(
            f"you may not {DESCRIPTIONS[action]}"
            + (f" ({what})" if what else "")
            + f": it takes one of these roles: {roles_allowed(action)}"
        )

    def may_edit_experiment(self, workspace_id: int, owner: str | None, username: str) -> bool:
        return self.allows(Action.EDIT_ANY_EXPERIMENT, workspace_id) or (
            owner == username and self.allows(Action.EDIT_OWN_EXPERIMENT, workspace_id)
        )


EVERYTHING = Grants({None: frozenset({Role.CLUSTER_ADMIN})})  # authentication off


EVERYTHING = Grants({None: frozenset({Role.CLUSTER_ADMIN})})  # authentication off
