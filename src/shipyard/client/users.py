"""Users, logging in and out, API tokens, login tickets and the audit log.

Logging in gives a token; keeping it (in $SHIPYARD_HOME/auth.json) is the caller's choice:
see shipyard.client.credentials."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal
from urllib.parse import quote

from pydantic import BaseModel, ValidationError

from shipyard.client.session import Session
from shipyard.common.api_users import (
    AuditEventInfo,
    CreatedToken,
    CreateTokenRequest,
    CreateUserRequest,
    LoginRequest,
    LoginResult,
    LoginTicket,
    PasswordChange,
    TokenInfo,
    UserInfo,
    WhoAmI,
)
from shipyard.common.errors import InvalidRequest


def _body(model: type[BaseModel], **fields: Any) -> dict[str, Any]:
    """The request body, checked here first: a bad value is an InvalidRequest naming the
    field, as the master would answer, without a round trip."""
    try:
        return model(**fields).model_dump(mode="json", exclude_unset=True)
    except ValidationError as exc:
        details = [
            {"path": ".".join(str(p) for p in e["loc"]), "message": e["msg"]} for e in exc.errors()
        ]
        raise InvalidRequest("the request is not valid", details) from None


# -- logging in ---------------------------------------------------------------------------


def login(session: Session, username: str, password: str) -> LoginResult:
    """A password login; the result carries a new token (shown this once)."""
    body = _body(LoginRequest, username=username, password=password, mode="token")
    return LoginResult.model_validate(session.post("/auth/login", json=body))


def logout(session: Session) -> None:
    """Revoke the token this session sends (the master ignores one it does not know)."""
    session.post("/auth/logout")


def whoami(session: Session) -> WhoAmI:
    return WhoAmI.model_validate(session.get("/auth/whoami"))


def create_login_ticket(session: Session) -> LoginTicket:
    """A single-use ticket that logs a browser in as this session's user (2 minutes)."""
    return LoginTicket.model_validate(session.post("/auth/tickets"))


def login_url(master_url: str, ticket: LoginTicket) -> str:
    """The web UI link that logs in whoever opens it first (once, before it expires)."""
    return f"{master_url}/login?ticket={quote(ticket.ticket, safe='')}"


# -- users --------------------------------------------------------------------------------


def _user_path(username: str) -> str:
    return f"/users/{quote(username, safe='')}"


def list_users(session: Session) -> list[UserInfo]:
    return [UserInfo.model_validate(item) for item in session.get("/users")]


def get_user(session: Session, username: str) -> UserInfo:
    return UserInfo.model_validate(session.get(_user_path(username)))


def create_user(
    session: Session,
    username: str,
    *,
    password: str | None = None,
    admin: bool = False,
    service: bool = False,
) -> UserInfo:
    """A person (with a password, or none yet) or a service account (tokens only)."""
    body = _body(
        CreateUserRequest, username=username, password=password, admin=admin, service=service
    )
    return UserInfo.model_validate(session.post("/users", json=body))


def change_password(
    session: Session, username: str, new_password: str, *, old_password: str | None = None
) -> None:
    """Your own password (old_password required), or anyone's if you are a cluster admin."""
    body = _body(PasswordChange, new_password=new_password, old_password=old_password)
    session.post(f"{_user_path(username)}/password", json=body)


def deactivate_user(session: Session, username: str) -> UserInfo:
    """Their tokens and sessions stop working at once; nothing of theirs is deleted."""
    return UserInfo.model_validate(session.post(f"{_user_path(username)}/deactivate"))


def activate_user(session: Session, username: str) -> UserInfo:
    return UserInfo.model_validate(session.post(f"{_user_path(username)}/activate"))


# -- API tokens ---------------------------------------------------------------------------

NEVER: Literal["never"] = "never"  # expires_in_days of a token that does not expire


def create_token(
    session: Session,
    *,
    name: str = "",
    expires_in_days: float | Literal["never"] | None = None,
    username: str | None = None,
) -> CreatedToken:
    """A new API token (its secret is in the answer only). expires_in_days: None for the
    master's default (90 days), NEVER for a token that does not expire; username: whose
    (cluster admins: another user or a service account; default yours)."""
    fields: dict[str, Any] = {"name": name, "username": username}
    if expires_in_days == NEVER:
        fields["expires_in_days"] = None
    elif expires_in_days is not None:
        fields["expires_in_days"] = expires_in_days
    body = _body(CreateTokenRequest, **fields)
    return CreatedToken.model_validate(session.post("/tokens", json=body))


def list_tokens(session: Session, *, all_users: bool = False) -> list[TokenInfo]:
    """Live tokens and login sessions (yours, or everyone's for a cluster admin), newest
    first; never their secrets."""
    items = session.get("/tokens", params={"all": "true" if all_users else "false"})
    return [TokenInfo.model_validate(item) for item in items]


def revoke_token(session: Session, token_id: int) -> TokenInfo:
    return TokenInfo.model_validate(session.post(f"/tokens/{int(token_id)}/revoke"))


# -- audit log ----------------------------------------------------------------------------


def list_audit_events(
    session: Session,
    *,
    since: datetime | None = None,
    user: str | None = None,
    limit: int | None = None,
) -> list[AuditEventInfo]:
    """Newest first (cluster admins); `user`: events by or about that user."""
    params = {
        "since": since.isoformat() if since is not None else None,
        "user": user,
        "limit": limit,
    }
    return [AuditEventInfo.model_validate(item) for item in session.get("/audit", params=params)]
