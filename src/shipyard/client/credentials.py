"""The tokens a user keeps: $SHIPYARD_HOME/auth.json (mode 0600), one per master URL, so a
token is only ever sent to the master that made it. `shipyard user login` writes it; a
master on 127.0.0.1 writes its local user's entry there itself (no login step on a laptop).
SHIPYARD_TOKEN, when set, is used instead for every master."""

from __future__ import annotations

import json
import os
from pathlib import Path

from shipyard.client.master_url import shipyard_home
from shipyard.common.errors import InvalidRequest

FILE = "auth.json"


def path(home: Path | None = None) -> Path:
    return (home or shipyard_home()) / FILE


def load(home: Path | None = None) -> dict[str, dict]:
    """{master url: {"username", "token"}}; empty when there is no file."""
    file = path(home)
    try:
        data = json.loads(file.read_text())
    except FileNotFoundError:
        return {}
    except json.JSONDecodeError as exc:
        raise InvalidRequest(
            f"{file} is not valid JSON ({exc.msg}, line {exc.lineno}); delete it and log in again"
        ) from exc
    masters = data.get("masters") if isinstance(data, dict) else None
    return {k: v for k, v in (masters or {}).items() if isinstance(v, dict)}


def entry(url: str, home: Path | None = None) -> dict | None:
    return load(home).get(url)


def token_for(url: str, home: Path | None = None) -> str | None:
    """SHIPYARD_TOKEN, else the token kept for this master, else None."""
    from_env = os.environ.get("SHIPYARD_TOKEN")
    if from_env:
        return from_env.strip()
    found = entry(url, home)
    token = found.get("token") if found else None
    return token if isinstance(token, str) else None


def save(url: str, username: str, token: str, home: Path | None = None) -> Path:
    masters = load(home)
    masters[url] = {"username": username, "token": token}
    return _write(masters, home)


def forget(url: str, home: Path | None = None) -> bool:
    masters = load(home)
    if masters.pop(url, None) is None:
        return False
    _write(masters, home)
    return True


def _write(masters: dict[str, dict], home: Path | None) -> Path:
    file = path(home)
    file.parent.mkdir(parents=True, exist_ok=True)
    tmp = file.with_name(f".{FILE}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as out:
        json.dump({"masters": masters}, out, indent=2)
        out.write("\n")
    os.replace(tmp, file)
    return file
