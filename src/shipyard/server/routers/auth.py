"""Logging in and out, who am I, and login tickets (the web UI link `shipyard up` prints).

`/login?ticket=...` is a page, not an API route: it turns a ticket into the web UI's
session cookie and sends the browser on to the UI."""

from __future__ import annotations

import secrets
from typing import Any

from fastapi import APIRouter, Depends, Query, Request, Response
from fastapi.responses import RedirectResponse

from shipyard.common import api_users
from shipyard.common.errors import NotFound, Unauthorized
from shipyard.server.auth.principal import (
    CSRF_COOKIE,
    SESSION_COOKIE,
    Principal,
    bearer,
    current_user,
)
from shipyard.server.routers.ui import page
from shipyard.server.services import api_tokens, audit, login
from shipyard.server.services.api_tokens import SESSION_LIFETIME, TICKET_LIFETIME
from shipyard.server.state import MasterState, master

router = APIRouter(tags=["auth"])
pages = APIRouter(include_in_schema=False)


def address(request: Request) -> str:
    return request.client.host if request.client else ""


def audited(
    action: str, p: Principal, request: Request, *, target: str, session: Any, **detail: Any
) -> None:
    """Record what the caller did through this request, in its write transaction."""
    audit.record(
        action,
        actor=p.username,
        target=target,
        address=address(request),
        session=session,
        **detail,
    )


@router.post("/auth/login", operation_id="login", response_model=api_users.LoginResult)
def log_in(
    req: api_users.LoginRequest,
    request: Request,
    response: Response,
    m: MasterState = Depends(master),
) -> api_users.LoginResult:
    """A password login: a token for the CLI and SDK, or the web UI's session cookie."""
    where = address(request)
    try:
        with m.db.read() as s:  # the Argon2 check runs outside the write lock
            user = login.authenticate(
                req.username, req.password, address=where, guard=m.login_guard, session=s
            )
    except Unauthorized:
        with m.db.write() as s:
            audit.record("login.failed", actor=req.username, address=where, session=s)
        raise
    with m.db.write() as s:  # a login session either way: a password change ends it
        token, secret = api_tokens.create(
            user.id, "session", name=f"login from {where}", lifetime=SESSION_LIFETIME, session=s
        )
        audit.record("login", actor=user.username, address=where, session=s, mode=req.mode)
    if req.mode == "cookie":
        set_session_cookies(response, secret, secure=m.settings.tls_cert is not None)
        return api_users.LoginResult(username=user.username, expires_at=token.expires_at)
    return api_users.LoginResult(username=user.username, token=secret, expires_at=token.expires_at)


@router.post("/auth/logout", operation_id="logout", status_code=204)
def log_out(request: Request, m: MasterState = Depends(master)) -> Response:
    """Revoke the token or session the request carries (unknown ones are ignored)."""
    secret = bearer(request) or request.cookies.get(SESSION_COOKIE)
    if secret:
        with m.db.write() as s:
            found = api_tokens.lookup(secret, session=s)
            if found is not None:
                api_tokens.revoke(found[0])
                audit.record("logout", actor=found[1].username, address=address(request), session=s)
        m.token_cache.clear()
    response = Response(status_code=204)
    response.delete_cookie(SESSION_COOKIE, path="/")
    response.delete_cookie(CSRF_COOKIE, path="/")
    return response


@router.get("/auth/whoami", operation_id="whoami", response_model=api_users.WhoAmI)
def whoami(p: Principal = Depends(current_user)) -> api_users.WhoAmI:
    return api_users.WhoAmI(
        username=p.username, admin=p.admin, service=p.service, via=p.via, token_id=p.token_id
    )


@router.post("/auth/tickets", operation_id="create_login_ticket", status_code=201)
def create_ticket(
    request: Request, p: Principal = Depends(current_user), m: MasterState = Depends(master)
) -> api_users.LoginTicket:
    """A single-use ticket (valid 2 minutes) that logs a browser in as the caller."""
    if p.user_id is None:  # --no-auth: the local user has no row to log in as
        raise NotFound(f"user {p.username!r} not found")
    with m.db.write() as s:
        token, secret = api_tokens.create(p.user_id, "ticket", lifetime=TICKET_LIFETIME, session=s)
        audit.record("ticket.create", actor=p.username, address=address(request), session=s)
    assert token.expires_at is not None
    return api_users.LoginTicket(ticket=secret, expires_at=token.expires_at)


@pages.get("/login", response_model=None)
def login_page(
    request: Request, ticket: str | None = Query(None), m: MasterState = Depends(master)
) -> Response:
    """The login form, or with ?ticket=: a session cookie and on to the UI."""
    if not ticket:
        return page()
    with m.db.write() as s:
        user = api_tokens.redeem_ticket(ticket, session=s)
        if user is None:
            return RedirectResponse("/login?expired=1", status_code=303)
        _token, secret = api_tokens.create(
            user.id, "session", name="login ticket", lifetime=SESSION_LIFETIME, session=s
        )
        audit.record(
            "login", actor=user.username, address=address(request), session=s, mode="ticket"
        )
    response = RedirectResponse("/", status_code=303)
    set_session_cookies(response, secret, secure=m.settings.tls_cert is not None)
    return response


def set_session_cookies(response: Response, secret: str, *, secure: bool) -> None:
    """The session (HttpOnly: no script reads it) and its CSRF token (read by the UI's
    script and sent back in a header on writes)."""
    max_age = int(SESSION_LIFETIME.total_seconds())
    response.set_cookie(
        SESSION_COOKIE,
        secret,
        max_age=max_age,
        httponly=True,
        samesite="lax",
        secure=secure,
        path="/",
    )
    response.set_cookie(
        CSRF_COOKIE,
        secrets.token_urlsafe(24),
        max_age=max_age,
        httponly=False,
        samesite="lax",
        secure=secure,
        path="/",
    )
