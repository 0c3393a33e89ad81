"""Who a request comes from, as FastAPI dependencies.

A user presents an API token (`Authorization: Bearer shy_u_…`) or the web UI's session
cookie; a write made with the cookie must also carry the CSRF token (the double-submit
cookie, sent back in a header), which another site's page cannot read. A trial presents its
task token, good only on its own trial's routes. With authentication off (`--no-auth`, only
on 127.0.0.1) every request is the local user's, an admin."""

from __future__ import annotations

import getpass
import hmac
from dataclasses import dataclass, replace

from fastapi import Depends, Request
from starlette.concurrency import run_in_threadpool

from shipyard.common.errors import Forbidden, Unauthorized
from shipyard.server.auth import tokens
from shipyard.server.auth.permissions import EVERYTHING, Action, Grants, Role
from shipyard.server.services import api_tokens, rbac
from shipyard.server.state import MasterState, master

SESSION_COOKIE = "shipyard_session"
CSRF_COOKIE = "shipyard_csrf"
CSRF_HEADER = "X-CSRF-Token"
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


@dataclass(frozen=True)
class Principal:
    username: str
    service: bool
    via: str  # "token", "session", "local"
    grants: Grants  # its roles, read with the token (a role change clears the token cache)
    user_id: int | None = None
    token_id: int | None = None

    @property
    def admin(self) -> bool:
        return Role.CLUSTER_ADMIN in self.grants.cluster_wide

    @property
    def sees(self) -> frozenset[int] | None:
        """The workspaces it sees (by id); None: every one."""
        return self.grants.workspaces()


@dataclass(frozen=True)
class TaskGrant:
    """What a trial's task token allows: reports for one trial, from one run."""

    trial_id: int
    run_id: int | None  # None: authentication is off

    def run(self, sent: object) -> object:
        """The run_id a report names, which must be the token's own run."""
        if self.run_id is not None and isinstance(sent, int) and sent != self.run_id:
            raise Forbidden(
                f"this task token speaks for run {self.run_id} of trial {self.trial_id}, "
                f"not run {sent}"
            )
        return sent


def bearer(request: Request) -> str | None:
    """The token of an `Authorization: Bearer <token>` header, if there is one."""
    scheme, _, value = request.headers.get("authorization", "").partition(" ")
    if scheme.lower() != "bearer":
        return None
    return value.strip() or None


async def current_user(request: Request, m: MasterState = Depends(master)) -> Principal:
    """The user a request comes from. async: a token already looked up (the token cache)
    costs no trip to the thread pool; the database is read only on a miss."""
    if not m.settings.auth:
        return Principal(username=getpass.getuser(), service=False, via="local", grants=EVERYTHING)
    secret = bearer(request)
    via = "token"
    if secret is None:
        secret = request.cookies.get(SESSION_COOKIE)
        via = "session"
        if secret is None:
            raise Unauthorized(
                "log in first: send an API token (Authorization: Bearer ...), "
                "e.g. with `shipyard user login`"
            )
        if request.method not in SAFE_METHODS:
            _check_csrf(request)
    kind = tokens.kind_of(secret)
    if kind == "task":
        raise Forbidden("a task token may only make its own trial's reports")
    if kind not in ("api", "session"):
        raise Unauthorized("the token is not a Shipyard token")
    digest = tokens.digest(secret)
    principal: Principal | None = m.token_cache.get(digest)
    if principal is None:
        principal = await run_in_threadpool(_look_up, m, secret, digest)
    if m.token_cache.due_for_touch(digest):
        await run_in_threadpool(_touch, m, principal.token_id)
    return principal if via == "token" else replace(principal, via=via)


def _look_up(m: MasterState, secret: str, digest: str) -> Principal:
    generation = m.token_cache.generation
    with m.db.read() as s:
        found = api_tokens.lookup(secret, session=s)
        if found is None:
            raise Unauthorized("the token is unknown, expired or revoked, or its user is inactive")
        token, user = found
        principal = Principal(
            username=user.username,
            service=user.is_service,
            via="token",
            grants=rbac.grants_of(user.id, session=s),
            user_id=user.id,
            token_id=token.id,
        )
    m.token_cache.put(digest, principal, token.expires_at, generation)
    return principal


def _touch(m: MasterState, token_id: int | None) -> None:
    with m.db.write() as s:
        api_tokens.touch(token_id, session=s)


def _check_csrf(request: Request) -> None:
    sent = request.headers.get(CSRF_HEADER, "")
    expected = request.cookies.get(CSRF_COOKIE, "")
    if not expected or not hmac.compare_digest(sent, expected):
        raise Forbidden(f"a write from the web UI needs its {CSRF_HEADER} header")


def needs(action: Action):
    """A dependency: the user, who must hold `action` at cluster scope (a 403 otherwise)."""

    async def check(principal: Principal = Depends(current_user)) -> Principal:
        principal.grants.require(action)
        return principal

    return check


async def trial_task(
    trial_id: int, request: Request, m: MasterState = Depends(master)
) -> TaskGrant:
    """The trial's own task token, checked without the database (an HMAC)."""
    if not m.settings.auth:
        return TaskGrant(trial_id=trial_id, run_id=None)
    secret = bearer(request)
    if secret is None:
        raise Unauthorized(f"trial {trial_id}'s reports need its task token")
    if tokens.kind_of(secret) != "task":
        raise Forbidden("a trial's reports take its task token, not a user's token")
    verified = m.task_tokens.verify(secret)
    if verified is None:
        raise Unauthorized("the task token is not valid")
    if verified[0] != trial_id:
        raise Forbidden(f"this task token belongs to trial {verified[0]}, not trial {trial_id}")
    return TaskGrant(trial_id=trial_id, run_id=verified[1])
