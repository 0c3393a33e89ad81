"""Request and response bodies of the REST API's users, login, tokens and audit routes."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, Field

USERNAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._@-]*$"


class LoginRequest(BaseModel):
    username: str = Field(min_length=1, max_length=128)
    password: str = Field(min_length=1, max_length=1024)
    # "token": the answer carries a token (the CLI and SDK keep it); "cookie": the answer
    # sets the web UI's session cookie and carries no token.
    mode: Literal["token", "cookie"] = "token"


class LoginResult(BaseModel):
    username: str
    token: str | None = None  # only in "token" mode; shown once
    expires_at: datetime | None = None


class WhoAmI(BaseModel):
    username: str
    admin: bool
    service: bool
    via: str  # "token", "session", or "local" (the master runs without authentication)
    token_id: int | None = None


class UserInfo(BaseModel):
    username: str
    admin: bool
    service: bool
    active: bool
    has_password: bool  # False: cannot log in with a password (tokens only)
    created_at: datetime


class CreateUserRequest(BaseModel):
    username: str = Field(min_length=1, max_length=128, pattern=USERNAME_PATTERN)
    password: str | None = Field(None, min_length=1, max_length=1024)
    admin: bool = False
    service: bool = Field(False, description="a service account: tokens only, no password")


class PasswordChange(BaseModel):
    new_password: str = Field(min_length=1, max_length=1024)
    # Required when users change their own password; an admin setting another's omits it.
    old_password: str | None = Field(None, max_length=1024)


class CreateTokenRequest(BaseModel):
    name: str = Field("", max_length=128, description="what the token is for")
    expires_in_days: float | None = Field(
        90, gt=0, le=3650, description="null: never expires (service accounts)"
    )
    username: str | None = Field(
        None, max_length=128, description="whose token (admins only; default: yours)"
    )


class TokenInfo(BaseModel):
    id: int
    username: str
    name: str
    prefix: str  # the token's first characters, to recognise it
    kind: str  # "api" or "session"
    created_at: datetime
    expires_at: datetime | None
    revoked_at: datetime | None
    last_used_at: datetime | None


class CreatedToken(TokenInfo):
    token: str  # the secret itself: shown once, never stored


class LoginTicket(BaseModel):
    ticket: str  # single use, for GET /login?ticket=...
    expires_at: datetime


class AuditEventInfo(BaseModel):
    id: int
    at: datetime
    actor: str
    action: str
    target: str
    address: str
    detail: dict[str, Any]
