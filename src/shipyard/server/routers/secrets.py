"""A workspace's secrets: names listed, values set and deleted (never read back), and the
rotation of the key they are sealed under. A workspace you hold no role in answers 404."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Request

from shipyard.common import api_teams
from shipyard.server.auth.permissions import Action
from shipyard.server.auth.principal import Principal, current_user
from shipyard.server.routers.auth import address, audited
from shipyard.server.services import secrets, workspaces
from shipyard.server.state import MasterState, master

router = APIRouter(tags=["secrets"])


@router.get(
    "/workspaces/{workspace}/secrets",
    operation_id="list_secrets",
    response_model=list[api_teams.SecretInfo],
)
def list_secrets(
    workspace: str, p: Principal = Depends(current_user), m: MasterState = Depends(master)
) -> list[api_teams.SecretInfo]:
    """The workspace's secrets by name, with their version and who set them last."""
    with m.db.read() as s:
        ws = workspaces.get(workspace, visible=p.sees, session=s)
        p.grants.require(Action.VIEW, ws.id)
        return secrets.list_all(ws, session=s)


@router.put(
    "/workspaces/{workspace}/secrets/{name}",
    operation_id="set_secret",
    response_model=api_teams.SecretInfo,
)
def set_secret(
    workspace: str,
    name: str,
    req: api_teams.SetSecretRequest,
    request: Request,
    p: Principal = Depends(current_user),
    m: MasterState = Depends(master),
) -> api_teams.SecretInfo:
    """Create the secret or give it a new value (its next version). The answer never holds
    the value; runs started from now on get the new one."""
    with m.db.write() as s:
        ws = workspaces.get(workspace, visible=p.sees, session=s)
        p.grants.require(Action.WRITE_SECRETS, ws.id, f"workspace {ws.name!r}")
        row = secrets.set_value(ws, name, req.value, by=p.username, settings=m.settings, session=s)
        audited(
            "secret.set",
            p,
            request,
            target=f"workspace:{ws.name}",
            session=s,
            name=name,
            version=row.version,
        )
        return secrets.info(row, ws)


@router.delete(
    "/workspaces/{workspace}/secrets/{name}", operation_id="delete_secret", status_code=204
)
def delete_secret(
    workspace: str,
    name: str,
    request: Request,
    p: Principal = Depends(current_user),
    m: MasterState = Depends(master),
) -> None:
    """Runs that start from now on and name it fail to start, saying so."""
    with m.db.write() as s:
        ws = workspaces.get(workspace, visible=p.sees, session=s)
        p.grants.require(Action.WRITE_SECRETS, ws.id, f"workspace {ws.name!r}")
        secrets.delete(ws, name, session=s)
        audited("secret.delete", p, request, target=f"workspace:{ws.name}", session=s, name=name)


@router.post(
    "/admin/rotate-keys", operation_id="rotate_keys", response_model=api_teams.RotateKeysResult
)
def rotate_keys(
    request: Request, p: Principal = Depends(current_user), m: MasterState = Depends(master)
) -> api_teams.RotateKeysResult:
    """Seal every secret anew under a new key, then drop the old keys (cluster admins)."""
    p.grants.require(Action.ROTATE_KEYS)
    return secrets.rotate(m.db, m.settings, actor=p.username, address=address(request))
