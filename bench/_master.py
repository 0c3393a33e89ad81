"""A Shipyard master for benchmark runs: its own home and port, started, and stopped at the
end (or killed and started again, for bench/recovery.py). With authentication on (the
default) it keeps a token of the local user in its home, which the benchmarks send."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import TracebackType

import httpx

from shipyard.client import credentials
from shipyard.common.ports import free_ports
from shipyard.server.auth.tokens import TaskTokens

REPO = Path(__file__).resolve().parents[1]
STARTUP_TIMEOUT_S = 60.0
STOP_GRACE_S = 15.0


def free_port() -> int:
    (port,) = free_ports(1, "127.0.0.1")
    return port


def has_training_point(api: httpx.Client, trial_id: int) -> bool:
    """Whether the trial has stored a training metric (``api``: the master's /api/v1)."""
    answer = api.get(f"/trials/{trial_id}/metrics", params={"group": "training"})
    return any(series["points"] for series in answer.raise_for_status().json())


class Master:
    """``with Master(slots=2) as master:`` runs ``python -m shipyard.server`` until the
    block ends. Given a ``home``, the home is kept; ``spawn`` and ``stop`` restart it.
    ``auth=False`` starts it with ``--no-auth``."""

    def __init__(
        self,
        slots: int | None = None,
        config: str | None = None,
        *,
        home: Path | None = None,
        command: list[str] | None = None,
        auth: bool = True,
    ) -> None:
        self.slots = slots
        self.auth = auth
        self.config = config  # the master's config file (YAML), e.g. resource pools
        self.command = command or [sys.executable, "-m", "shipyard.server"]
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self._own_home = home is None
        self.home = home or Path(tempfile.mkdtemp(prefix="shipyard-bench-"))
        self.log_path = self.home / "master.log"
        self.process: subprocess.Popen[bytes] | None = None
        self.spawned_wall = 0.0  # time.time() at the last spawn, for the log's timestamps
        self.log_offset = 0  # where the last start's lines begin in master.log
        self.token: str | None = None  # the local user's API token, once the master answers

    def __enter__(self) -> Master:
        self.spawn()
        try:
            self.wait_until_answering()
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
        if self._own_home:
            shutil.rmtree(self.home, ignore_errors=True)

    def spawn(self) -> float:
        """Start the master; returns time.perf_counter() just before the spawn."""
        argv = [*self.command, "--port", str(self.port), "--home", str(self.home)]
        if self.slots is not None:
            argv += ["--slots", str(self.slots)]
        if self.config is not None:
            (self.home / "master.yaml").write_text(self.config)
            argv += ["--config", str(self.home / "master.yaml")]
        if not self.auth:
            argv.append("--no-auth")
        env = {**os.environ, "SHIPYARD_HOME": str(self.home)}
        env.pop("SHIPYARD_MASTER", None)
        for setting in ("SHIPYARD_AUTH", "SHIPYARD_LOCAL_TOKEN"):
            env.pop(setting, None)  # `auth` alone says whether the bench's master checks tokens
        self.log_offset = self.log_path.stat().st_size if self.log_path.exists() else 0
        with open(self.log_path, "ab") as log:
            self.spawned_wall = time.time()
            started = time.perf_counter()
            self.process = subprocess.Popen(
                argv, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=REPO
            )
        return started

    def wait_until_answering(
        self, timeout_s: float = STARTUP_TIMEOUT_S, poll_s: float = 0.1
    ) -> float:
        """Poll GET /health (it needs no token) until it answers 200, then read the token;
        returns time.perf_counter() at the answer."""
        assert self.process is not None
        deadline = time.monotonic() + timeout_s
        with httpx.Client(base_url=self.url, timeout=2) as client:
            while time.monotonic() < deadline:
                if self.process.poll() is not None:
                    raise RuntimeError(
                        f"the master exited ({self.process.returncode}):\n{self.log()}"
                    )
                try:
                    if client.get("/api/v1/health").status_code == 200:
                        answered = time.perf_counter()
                        self.token = self._kept_token()
                        return answered
                except httpx.TransportError:
                    pass
                time.sleep(poll_s)
        raise RuntimeError(f"the master did not answer within {timeout_s} s:\n{self.log()}")

    def _kept_token(self) -> str | None:
        """The token the master keeps for the local user in its auth.json (None without
        authentication). It is written before the master serves, and kept across restarts."""
        if not self.auth:
            return None
        kept = credentials.entry(self.url, self.home)
        if not kept or not isinstance(kept.get("token"), str):
            raise RuntimeError(f"the master left no token for {self.url} in {self.home}")
        return kept["token"]

    def _authorize(self, request: httpx.Request) -> httpx.Request:
        # Read at each request: a client made before the master answers still signs in.
        if self.token:
            request.headers["Authorization"] = f"Bearer {self.token}"
        return request

    def api(self, timeout_s: float = 30.0) -> httpx.Client:
        """An httpx client on the master's /api/v1, as the local user."""
        return httpx.Client(base_url=f"{self.url}/api/v1", timeout=timeout_s, auth=self._authorize)

    def task_token(self, trial_id: int, run_id: int) -> str | None:
        """The task token the master gives that run of the trial (None without
        authentication): what the trial's own reports carry."""
        return TaskTokens.of_home(self.home).mint(trial_id, run_id) if self.auth else None

    def stop(self, sig: int = signal.SIGTERM, timeout_s: float = STOP_GRACE_S) -> float:
        """Send ``sig`` and wait for the exit (killing it after ``timeout_s``); returns the
        seconds that took."""
        process = self.process
        if process is None or process.poll() is not None:
            return 0.0
        started = time.perf_counter()
        process.send_signal(sig)
        try:
            process.wait(timeout_s)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        return time.perf_counter() - started

    def log(self, last_lines: int = 40) -> str:
        try:
            lines = self.log_path.read_text(errors="replace").splitlines()
        except OSError:
            return "(no master log)"
        return "\n".join(lines[-last_lines:])
