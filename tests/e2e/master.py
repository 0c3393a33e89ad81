"""A real master in a subprocess, on a free port with a throwaway home, for tests."""

from __future__ import annotations

import io
import os
import signal
import socket
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import httpx

TERMINAL = {"COMPLETED", "CANCELED", "ERRORED"}
SHIPYARD = Path(sys.executable).parent / "shipyard"  # the installed command


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def make_context(directory: Path) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for path in sorted(directory.rglob("*")):
            if "__pycache__" in path.parts or path.name == "checkpoints":
                continue
            tar.add(path, arcname=str(path.relative_to(directory)), recursive=False)
    return buf.getvalue()


class Master:
    def __init__(
        self, home: Path, slots: int = 2, db_url: str | None = None, config: str | None = None
    ) -> None:
        self.home = home
        self.slots = slots
        self.db_url = db_url
        self.config = config  # the master's config file (YAML), e.g. resource pools
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc: subprocess.Popen | None = None
        self.http = httpx.Client(base_url=self.url + "/api/v1", timeout=30)

    def start(self) -> Master:
        env = dict(os.environ)
        env.pop("SHIPYARD_MASTER", None)
        if self.db_url:
            env["SHIPYARD_DB_URL"] = self.db_url
        self.home.mkdir(parents=True, exist_ok=True)
        extra = []
        if self.config is not None:
            (self.home / "master.yaml").write_text(self.config)
            extra = ["--config", str(self.home / "master.yaml")]
        self.log = open(self.home / "master-test.log", "ab")  # noqa: SIM115 - kept open while running
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "shipyard.server",
                "--port",
                str(self.port),
                "--home",
                str(self.home),
                "--slots",
                str(self.slots),
                *extra,
            ],
            env=env,
            stdout=self.log,
            stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"master exited: {(self.home / 'master-test.log').read_text()}")
            try:
                if self.http.get("/master").status_code == 200:
                    return self
            except httpx.TransportError:
                pass
            time.sleep(0.05)
        raise RuntimeError("master did not answer within 30 s")

    def stop(self, sig: int = signal.SIGTERM) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(sig)
            self.proc.wait(timeout=30)
        self.proc = None

    def kill9(self) -> None:
        self.stop(signal.SIGKILL)

    # -- API shortcuts ----------------------------------------------------------------

    def upload(self, context_dir: Path) -> str:
        r = self.http.post(
            "/contexts",
            content=make_context(context_dir),
            headers={"content-type": "application/gzip"},
        )
        r.raise_for_status()
        return r.json()["id"]

    def post_experiment(self, config_yaml: str, context_dir: Path | None) -> httpx.Response:
        context_id = self.upload(context_dir) if context_dir is not None else None
        return self.http.post(
            "/experiments", json={"config_yaml": config_yaml, "context_id": context_id}
        )

    def create(self, config_yaml: str, context_dir: Path | None) -> dict:
        r = self.post_experiment(config_yaml, context_dir)
        assert r.status_code == 201, r.text
        return r.json()

    def experiment(self, exp_id: int) -> dict:
        r = self.http.get(f"/experiments/{exp_id}")
        r.raise_for_status()
        return r.json()

    def wait(self, exp_id: int, timeout: float = 120, states=TERMINAL) -> dict:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            exp = self.experiment(exp_id)
            if exp["state"] in states:
                return exp
            time.sleep(0.1)
        raise AssertionError(f"experiment {exp_id} still {exp['state']} after {timeout} s: {exp}")

    def wait_for(self, predicate, timeout: float = 60, what: str = "condition"):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            value = predicate()
            if value:
                return value
            time.sleep(0.05)
        raise AssertionError(f"timed out waiting for {what}")

    def trial(self, trial_id: int) -> dict:
        r = self.http.get(f"/trials/{trial_id}")
        r.raise_for_status()
        return r.json()

    def metrics(self, trial_id: int, group: str, name: str) -> list[tuple[int, float]]:
        r = self.http.get(f"/trials/{trial_id}/metrics", params={"group": group, "name": name})
        r.raise_for_status()
        series = r.json()
        return [(p["steps_completed"], p["value"]) for s in series for p in s["points"]]

    def logs(self, trial_id: int) -> list[str]:
        out, after = [], 0
        while True:
            page = self.http.get(f"/trials/{trial_id}/logs", params={"after": after}).json()
            out += [line["text"] for line in page["lines"]]
            if not page["lines"]:
                return out
            after = page["next_after"]

    def cli(self, *args: object) -> subprocess.CompletedProcess:
        """The installed `shipyard` command against this master, with a terminal wide
        enough for whole table columns."""
        return subprocess.run(
            [str(SHIPYARD), "--master", self.url, *map(str, args)],
            capture_output=True,
            text=True,
            timeout=60,
            env={**os.environ, "COLUMNS": "200"},
        )


def two_rank_all_reduce(master: Master, config: str, code_dir: Path) -> dict:
    """Run a one-trial experiment of trial_code/all_reduce.py on 2 slots and check what a
    user would: it completes, both ranks summed 1 + 2, each rank's lines are in the logs.
    Returns the trial."""
    exp = master.create(config + "max_restarts: 0\n", code_dir)
    done = master.wait(exp["id"], timeout=90)
    trial = master.trial(done["trials"][0]["id"])
    assert done["state"] == "COMPLETED", trial
    assert master.metrics(trial["id"], "validation", "val_loss") == [(1, 3.0)]  # 1 + 2
    logs = master.logs(trial["id"])
    assert "starting 2 rank(s) on cpu0,cpu1: python3 all_reduce.py" in logs
    assert "rank 0 sum 3" in logs and "rank 1 sum 3" in logs
    return trial


def pause_then_resume(master: Master, exp_id: int, trial_id: int, timeout: float = 120) -> dict:
    """Pause a running one-trial experiment, wait until the trial's run has ended, activate
    it again and wait until it completes; returns the trial. Checks what holds on every
    backend: two runs, and one training loss a step, none lost or doubled."""
    master.http.post(f"/experiments/{exp_id}/pause").raise_for_status()
    master.wait_for(
        lambda: master.trial(trial_id)["runs"][0].get("ended_how"), timeout=60, what="the stop"
    )
    master.http.post(f"/experiments/{exp_id}/activate").raise_for_status()
    assert master.wait(exp_id, timeout=timeout)["state"] == "COMPLETED"
    trial = master.trial(trial_id)
    assert len(trial["runs"]) == 2, trial["runs"]
    assert trial["restarts"] == 0  # a pause is not a failure
    steps = trial["hparams"]["steps"]
    assert [s for s, _ in master.metrics(trial_id, "training", "loss")] == list(range(1, steps + 1))
    return trial


def resumed_from(master: Master, trial_id: int) -> int:
    """The step the trial's second run restored (tests/e2e/trial_code/steps.py prints it)."""
    line = next(line for line in master.logs(trial_id) if line.startswith("resumed from step"))
    return int(line.split()[-1])
