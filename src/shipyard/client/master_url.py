"""Where the master is: one resolution rule shared by the CLI and the SDK.

Order: an explicit URL > SHIPYARD_MASTER > the `url` in $SHIPYARD_HOME/master.json (written by
`shipyard up`) > http://127.0.0.1:8080.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from shipyard.common.errors import InvalidRequest

DEFAULT_MASTER_URL = "http://127.0.0.1:8080"
MASTER_STATE_FILE = "master.json"


def shipyard_home() -> Path:
    """The master's state directory: $SHIPYARD_HOME, or ~/.shipyard."""
    configured = os.environ.get("SHIPYARD_HOME")
    return Path(configured).expanduser() if configured else Path.home() / ".shipyard"


def master_state_path(home: Path | None = None) -> Path:
    return (home or shipyard_home()) / MASTER_STATE_FILE


def read_master_state(home: Path | None = None) -> dict | None:
    """The record `shipyard up` left ({"url", "pid", "port", "home"}), or None if there is none."""
    path = master_state_path(home)
    try:
        text = path.read_text()
    except FileNotFoundError:
        return None
    try:
        state = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidRequest(
            f"{path} is not valid JSON ({exc.msg}, line {exc.lineno}); "
            "delete it and run `shipyard up` again"
        ) from exc
    if not isinstance(state, dict):
        raise InvalidRequest(f"{path} should hold a JSON object; delete it and run `shipyard up`")
    return state


def normalize_master_url(url: str) -> str:
    """Accept `host:port` as well as `http://host:port`; drop a trailing slash."""
    url = url.strip()
    if not url:
        raise InvalidRequest("the master URL is empty; give one like http://127.0.0.1:8080")
    if "://" not in url:
        url = f"http://{url}"
    if not url.startswith(("http://", "https://")):
        raise InvalidRequest(f"master URL {url!r} must start with http:// or https://")
    return url.rstrip("/")


def resolve_master_url(explicit: str | None = None) -> str:
    if explicit:
        return normalize_master_url(explicit)
    from_env = os.environ.get("SHIPYARD_MASTER")
    if from_env:
        return normalize_master_url(from_env)
    state = read_master_state()
    if state and isinstance(state.get("url"), str):
        return normalize_master_url(state["url"])
    return DEFAULT_MASTER_URL
