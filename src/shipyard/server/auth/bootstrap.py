"""What a master does about users when it starts: make the first admin, and on 127.0.0.1
give the local user a token (the laptop mode: the README's commands need no login)."""

from __future__ import annotations

import getpass
import ipaddress
import logging
import os
import sys
from pathlib import Path

from shipyard.client import credentials
from shipyard.server.auth.passwords import hash_password
from shipyard.server.db import Database
from shipyard.server.services import api_tokens, audit, users
from shipyard.server.settings import Settings

log = logging.getLogger(__name__)
ADMIN_PASSWORD_FILE = "admin-password"


def local_username() -> str:
    return getpass.getuser()


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def first_admin(settings: Settings, db: Database) -> None:
    """With no active admin, make one (the local user unless SHIPYARD_ADMIN_USER names
    another) with a one-time password: printed to a terminal, or else left in
    $SHIPYARD_HOME/admin-password (0600) for `shipyard up` to show once. Never logged."""
    name = settings.admin_user or local_username()
    with db.write() as s:
        if users.admins(session=s):
            return
        user = users.ensure(name, admin=True, session=s)
        user.active = True
        password = users.one_time_password()
        user.password_hash = hash_password(password)
        audit.record("user.first_admin", actor="-", target=f"user:{name}", session=s)
    if sys.stderr.isatty():
        print(
            f"Shipyard: made the cluster admin {name!r}; its one-time password (shown once, "
            f"change it with `shipyard user change-password`): {password}",
            file=sys.stderr,
            flush=True,
        )
        return
    path = settings.home / ADMIN_PASSWORD_FILE
    _write_private(path, f"{name}\n{password}\n")
    log.warning("made the cluster admin %r; its one-time password is in %s", name, path)


def local_token(settings: Settings, db: Database) -> None:
    """On 127.0.0.1, keep a token of the local user in $SHIPYARD_HOME/auth.json, made once
    and reused while it stays valid. Whoever can read that file can read the database too."""
    if not (settings.auth and settings.local_token and is_loopback(settings.host)):
        return
    name = local_username()
    url = settings.master_url
    kept = credentials.entry(url, settings.home)
    with db.write() as s:
        if kept and kept.get("username") == name and isinstance(kept.get("token"), str):
            if api_tokens.lookup(kept["token"], session=s) is not None:
                return
        user = users.ensure(name, admin=users.admins(session=s) == 0, session=s)
        _row, secret = api_tokens.create(user.id, "api", name="local", lifetime=None, session=s)
        audit.record("token.create", actor="-", target=f"user:{name}", session=s, name="local")
    credentials.save(url, name, secret, settings.home)


def _write_private(path: Path, text: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as out:
        out.write(text)
