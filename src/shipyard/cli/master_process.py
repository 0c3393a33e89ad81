"""Starting and stopping the local master process that `shipyard up` / `down` manage.

`shipyard up` records the process in $SHIPYARD_HOME/master.json ({"url", "pid", "port",
"home"}); the CLI and the SDK read the URL from there, `shipyard down` the pid.

Once it answers, `up` shows what the master left for the person who started it: the first
admin's one-time password ($SHIPYARD_HOME/admin-password, shown once, then deleted) and a
web UI link with a single-use login ticket, made with the local user's token the master
keeps in $SHIPYARD_HOME/auth.json (laptop mode).
"""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from shipyard.client import credentials
from shipyard.client.master import get_health
from shipyard.client.master_url import master_state_path, read_master_state
from shipyard.client.session import Session
from shipyard.client.users import create_login_ticket, login_url
from shipyard.common.errors import ShipyardError

STARTUP_TIMEOUT_S = 15.0
STOP_GRACE_S = 10.0
LOG_TAIL_LINES = 20
# Where a master started without a terminal leaves its first admin's one-time password
# (two lines: name, password); written by shipyard.server.auth.bootstrap.
ADMIN_PASSWORD_FILE = "admin-password"
# What `python -m shipyard.server` imports beyond a plain `pip install shipyard`: the modules
# of pyproject.toml's server extra (uvloop and httptools only speed uvicorn up).
SERVER_MODULES = (
    "fastapi",
    "uvicorn",
    "sqlalchemy",
    "alembic",
    "pydantic_settings",
    "argon2",
    "cryptography",
)


@dataclass(frozen=True)
class MasterLaunch:
    host: str
    port: int
    home: Path
    slots: int | None = None
    config: Path | None = None  # the master's config file (resource pools)
    auth: bool = True  # False: --no-auth (the master refuses it beyond 127.0.0.1)
    tls_cert: Path | None = None  # HTTPS: the certificate and its key (PEM)
    tls_key: Path | None = None

    @property
    def url(self) -> str:
        # A master listening on every interface is reached through the loopback one.
        host = "127.0.0.1" if self.host in ("0.0.0.0", "", "::") else self.host
        host = f"[{host}]" if ":" in host else host
        scheme = "https" if self.tls_cert else "http"
        return f"{scheme}://{host}:{self.port}"

    @property
    def log_path(self) -> Path:
        return self.home / "master.log"

    def argv(self) -> list[str]:
        argv = [sys.executable, "-m", "shipyard.server", "--host", self.host]
        argv += ["--port", str(self.port), "--home", str(self.home)]
        if self.slots is not None:
            argv += ["--slots", str(self.slots)]
        if self.config is not None:
            argv += ["--config", str(self.config)]
        if not self.auth:
            argv.append("--no-auth")
        if self.tls_cert is not None:
            argv += ["--tls-cert", str(self.tls_cert)]
        if self.tls_key is not None:
            argv += ["--tls-key", str(self.tls_key)]
        return argv

    def env(self) -> dict[str, str]:
        return {**os.environ, "SHIPYARD_HOME": str(self.home)}


def require_server_packages(command: str) -> None:
    """Refuse, in one line, to start a master this install cannot run (the light install
    of training images has no server extra), instead of a traceback from its log."""
    for name in SERVER_MODULES:
        if importlib.util.find_spec(name) is None:
            raise ShipyardError(
                f"{command} needs the master's packages (no {name} here): "
                "pip install 'shipyard[server]'"
            )


def probe_master(url: str, timeout_s: float = 2.0) -> dict | None:
    """The health answer if a Shipyard master answers at url (no token needed), else None."""
    try:
        with Session(url, timeout_s=timeout_s) as session:
            return get_health(session)
    except ShipyardError:
        return None


def take_admin_password(home: Path) -> tuple[str, str] | None:
    """The first admin's name and one-time password the master left in its home, read once:
    the file is deleted as it is read."""
    path = home / ADMIN_PASSWORD_FILE
    try:
        lines = path.read_text().splitlines()
    except FileNotFoundError:
        return None
    path.unlink(missing_ok=True)
    if len(lines) < 2 or not lines[0].strip() or not lines[1]:
        raise ShipyardError(f"{path} did not hold a user name and a password; removed it")
    return lines[0].strip(), lines[1]


def web_ui_link(url: str, home: Path, health: dict) -> str:
    """The web UI's address for the person who ran `up`: with a single-use login ticket
    when the master keeps them a token (in home's auth.json, or SHIPYARD_TOKEN)."""
    if health.get("auth") is False:
        return f"{url}/"
    token = credentials.token_for(url, home)
    if token is None:
        return f"{url}/login (log in with your user name and password)"
    try:
        with Session(url, token=token) as session:
            ticket = create_login_ticket(session)
    except ShipyardError as error:
        return f"{url}/login (no login link: {error.message})"
    minutes = max(1, round((ticket.expires_at - datetime.now(UTC)).total_seconds() / 60))
    return f"{login_url(url, ticket)} (single use, valid {minutes} min)"


def write_master_state(launch: MasterLaunch, pid: int) -> None:
    state = {"url": launch.url, "pid": pid, "port": launch.port, "home": str(launch.home)}
    path = master_state_path(launch.home)
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(state, indent=2) + "\n")
    os.replace(tmp, path)


def running_master_pid(home: Path) -> int | None:
    """The pid recorded in master.json if that process is still a Shipyard master."""
    state = read_master_state(home)
    pid = state.get("pid") if state else None
    return pid if isinstance(pid, int) and is_master_process(pid) else None


def is_master_process(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # alive, owned by someone else
    proc = Path(f"/proc/{pid}")
    if not proc.exists():  # no procfs (macOS): trust the pid
        return True
    try:
        if proc.joinpath("stat").read_text().rsplit(")", 1)[1].split()[0] == "Z":
            return False  # exited, not yet reaped
        # The pid may have been reused by an unrelated process since master.json was written.
        return b"shipyard.server" in proc.joinpath("cmdline").read_bytes()
    except (OSError, IndexError):
        return False


def start_background(launch: MasterLaunch) -> int:
    """Spawn the master detached, record it, and wait until it answers. Returns its pid.
    If it exits first, the error carries the end of its log (e.g. the port is in use)."""
    launch.home.mkdir(parents=True, exist_ok=True)
    with launch.log_path.open("ab") as log:
        log_start = log.tell()
        process = subprocess.Popen(
            launch.argv(),
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=launch.env(),
            start_new_session=True,  # Ctrl-C in this terminal must not reach the master
        )
    write_master_state(launch, process.pid)
    deadline = time.monotonic() + STARTUP_TIMEOUT_S
    while time.monotonic() < deadline:
        code = process.poll()
        if code is not None:
            master_state_path(launch.home).unlink(missing_ok=True)
            raise ShipyardError(
                f"the master exited (code {code}) before answering; the end of "
                f"{launch.log_path}:\n{log_tail(launch.log_path, log_start)}"
            )
        if probe_master(launch.url, timeout_s=1.0):
            return process.pid
        time.sleep(0.2)
    raise ShipyardError(
        f"the master (pid {process.pid}) did not answer at {launch.url} within "
        f"{STARTUP_TIMEOUT_S:.0f} s; it may still be starting. See {launch.log_path}, "
        "or stop it with `shipyard down`"
    )


def exec_foreground(launch: MasterLaunch) -> None:
    """Replace this process with the master, so a service manager sees one process."""
    launch.home.mkdir(parents=True, exist_ok=True)
    write_master_state(launch, os.getpid())  # exec keeps the pid
    argv = launch.argv()
    os.execve(argv[0], argv, launch.env())


def log_tail(path: Path, start: int = 0, lines: int = LOG_TAIL_LINES) -> str:
    try:
        with path.open("rb") as handle:
            handle.seek(start)
            text = handle.read().decode(errors="replace")
    except OSError:
        return "(no log)"
    tail = text.strip().splitlines()[-lines:]
    return "\n".join(tail) if tail else "(the log is empty)"


def stop_master(home: Path) -> str:
    """SIGTERM the recorded master, SIGKILL it after a grace period; returns what happened."""
    state_path = master_state_path(home)
    state = read_master_state(home)
    if state is None:
        return "no master running"
    pid = running_master_pid(home)
    if pid is None:
        state_path.unlink(missing_ok=True)
        return f"no master running (removed the stale {state_path})"
    os.kill(pid, signal.SIGTERM)
    if not wait_for_exit(pid, STOP_GRACE_S):
        os.kill(pid, signal.SIGKILL)
        wait_for_exit(pid, 5.0)
        state_path.unlink(missing_ok=True)
        return f"the master (pid {pid}) did not stop within {STOP_GRACE_S:.0f} s; killed it"
    state_path.unlink(missing_ok=True)
    return f"stopped the master (pid {pid})"


def wait_for_exit(pid: int, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if not is_master_process(pid):
            return True
        time.sleep(0.1)
    return not is_master_process(pid)
