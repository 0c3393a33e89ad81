"""A Shipyard master for one benchmark run: temp home, free port, stopped at the end."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import TracebackType

import httpx

REPO = Path(__file__).resolve().parents[1]
STARTUP_TIMEOUT_S = 60.0
STOP_GRACE_S = 15.0


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Master:
    """``with Master(slots=2) as master:`` runs ``python -m shipyard.server`` until the
    block ends."""

    def __init__(self, slots: int | None = None, config: str | None = None) -> None:
        self.slots = slots
        self.config = config  # the master's config file (YAML), e.g. resource pools
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.home = Path(tempfile.mkdtemp(prefix="shipyard-bench-"))
        self.log_path = self.home / "master.log"
        self._process: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> Master:
        argv = [sys.executable, "-m", "shipyard.server", "--port", str(self.port)]
        argv += ["--home", str(self.home)]
        if self.slots is not None:
            argv += ["--slots", str(self.slots)]
        if self.config is not None:
            (self.home / "master.yaml").write_text(self.config)
            argv += ["--config", str(self.home / "master.yaml")]
        env = {**os.environ, "SHIPYARD_HOME": str(self.home)}
        env.pop("SHIPYARD_MASTER", None)
        with open(self.log_path, "wb") as log:
            self._process = subprocess.Popen(
                argv, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=REPO
            )
        try:
            self._wait_until_answering()
        except BaseException:
            self._stop()
            raise
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._stop()

    def _wait_until_answering(self) -> None:
        assert self._process is not None
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                raise RuntimeError(f"the master exited ({self._process.returncode}):\n{self.log()}")
            try:
                if httpx.get(f"{self.url}/api/v1/master", timeout=2).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            time.sleep(0.1)
        raise RuntimeError(f"the master did not answer within {STARTUP_TIMEOUT_S} s:\n{self.log()}")

    def _stop(self) -> None:
        process = self._process
        if process is not None and process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(STOP_GRACE_S)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        shutil.rmtree(self.home, ignore_errors=True)

    def log(self, last_lines: int = 40) -> str:
        try:
            lines = self.log_path.read_text(errors="replace").splitlines()
        except OSError:
            return "(no master log)"
        return "\n".join(lines[-last_lines:])
