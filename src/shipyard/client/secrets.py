"""A workspace's secrets: set (a new version each time), listed by name, deleted; and the
rotation of the key they are sealed under (cluster admins). The master never sends a value
back: nothing here returns one."""

from __future__ import annotations

from urllib.parse import quote

from shipyard.client.session import Session
from shipyard.client.users import _body
from shipyard.common.api_teams import RotateKeysResult, SecretInfo, SetSecretRequest


def _secrets_path(workspace: str, name: str | None = None) -> str:
    path = f"/workspaces/{quote(workspace, safe='')}/secrets"
    return path if name is None else f"{path}/{quote(name, safe='')}"


def list_secrets(session: Session, workspace: str) -> list[SecretInfo]:
    """The workspace's secrets by name, with their version and who set them last."""
    return [SecretInfo.model_validate(item) for item in session.get(_secrets_path(workspace))]


def set_secret(session: Session, workspace: str, name: str, value: str) -> SecretInfo:
    """Create the secret, or give it a new value (its next version): runs that start from
    now on get it. Needs the workspace_admin role (or cluster_admin)."""
    body = _body(SetSecretRequest, value=value)
    return SecretInfo.model_validate(session.put(_secrets_path(workspace, name), json=body))


def delete_secret(session: Session, workspace: str, name: str) -> None:
    session.delete(_secrets_path(workspace, name))


def rotate_keys(session: Session) -> RotateKeysResult:
    """Seal every secret anew under a new key and drop the old keys (cluster admins)."""
    return RotateKeysResult.model_validate(session.post("/admin/rotate-keys"))
