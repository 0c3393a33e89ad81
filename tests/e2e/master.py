"""A real master in a subprocess, on a free port with a throwaway home, for tests; and what
the e2e tests of each backend's pool (Slurm, Ray, Kubernetes) submit and check alike."""

from __future__ import annotations

import io
import json
import os
import signal
import ssl
import subprocess
import sys
import tarfile
from dataclasses import dataclass, replace
from pathlib import Path

import httpx

from shipyard.client import credentials
from shipyard.common.ports import free_ports
from shipyard.server.auth.tokens import TaskTokens
from tests.fixtures import empty_database
from tests.fixtures.cli import run_cli
from tests.fixtures.plain_http import NO_TLS
from tests.fixtures.poll import poll

TERMINAL = {"COMPLETED", "CANCELED", "ERRORED"}
SHIPYARD = Path(sys.executable).parent / "shipyard"  # the installed command
CODE = Path(__file__).parent / "trial_code"  # the tests' training scripts
SINGLE = "{name: single, metric: val_loss}"
PAUSABLE = "{steps: 30, ckpt_every: 5, sleep: 0.1}"  # long enough to pause at step 8
PREEMPTED = "exited with code 0; preempted: resumes from its checkpoint"


def free_port() -> int:
    (port,) = free_ports(1, "127.0.0.1")
    return port


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
        self,
        home: Path,
        slots: int = 2,
        db_url: str | None = None,
        config: str | None = None,
        tls: tuple[Path, Path] | None = None,
        host: str | None = None,
    ) -> None:
        self.home = home
        self.slots = slots
        self.db_url = db_url
        self.config = config  # the master's config file (YAML), e.g. resource pools
        self.tls = tls  # (certificate, key): HTTPS, the certificate trusted by the client
        self.host = host  # where it listens (default 127.0.0.1); the tests reach 127.0.0.1
        self.port = free_port()
        self.url = f"{'https' if tls else 'http'}://127.0.0.1:{self.port}"
        self.proc: subprocess.Popen | None = None
        self.http = self._client()
        self._users: dict[str, httpx.Client] = {}

    def start(self) -> Master:
        env = dict(os.environ)
        env.pop("SHIPYARD_MASTER", None)
        if self.db_url:
            env["SHIPYARD_DB_URL"] = self.db_url
        self.home.mkdir(parents=True, exist_ok=True)
        if not self.db_url and not (self.home / "shipyard.db").exists():
            empty_database.copy_to(self.home / "shipyard.db")  # the migrations, done once
        extra = []
        if self.config is not None:
            (self.home / "master.yaml").write_text(self.config)
            extra = ["--config", str(self.home / "master.yaml")]
        if self.tls is not None:
            extra += ["--tls-cert", str(self.tls[0]), "--tls-key", str(self.tls[1])]
        if self.host is not None:
            extra += ["--host", self.host]
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
        poll(self._answers, "the master to answer", timeout_s=30, ignore=(httpx.TransportError,))
        self._sign_in()
        return self

    def _answers(self) -> bool:
        assert self.proc is not None
        if self.proc.poll() is not None:
            raise RuntimeError(f"master exited: {(self.home / 'master-test.log').read_text()}")
        return self.http.get("/health").status_code == 200

    def _sign_in(self) -> None:
        """Take the local user's token the master keeps in its home (laptop mode), for
        `self.http` and for every client of this test process (its own Shipyard home)."""
        kept = credentials.entry(self.url, self.home)
        if kept is None and self.host is not None:  # beyond loopback: no laptop mode
            kept = self._admin_login()
        assert kept, f"the master left no token for {self.url} in {self.home}"
        self.username, self.token = kept["username"], kept["token"]
        self.http.headers["Authorization"] = f"Bearer {self.token}"
        self.keep_token_in()

    def _admin_login(self) -> dict[str, str]:
        """The first admin's token, from a login with the one-time password the master
        left in its home."""
        name, password = (self.home / "admin-password").read_text().split()
        r = self.http.post("/auth/login", json={"username": name, "password": password})
        assert r.status_code == 200, r.text
        return {"username": name, "token": r.json()["token"]}

    def keep_token_in(self, home: Path | None = None) -> None:
        """Keep this master's token in a Shipyard home (default: the test process's), as
        `shipyard user login` does, for the CLI and the SDK run with that home."""
        credentials.save(self.url, self.username, self.token, home)

    def task_http(self, trial_id: int, run_id: int) -> httpx.Client:
        """A client with the task token the master gives that run of the trial (made from
        the master's key, as the master makes it): what the trial's own reports carry."""
        return self._client(TaskTokens.of_home(self.home).mint(trial_id, run_id))

    def _client(self, token: str | None = None) -> httpx.Client:
        """An httpx client of this master's API, with a token if given."""
        return httpx.Client(
            base_url=self.url + "/api/v1",
            timeout=30,
            headers={"Authorization": f"Bearer {token}"} if token else None,
            verify=ssl.create_default_context(cafile=self.tls[0]) if self.tls else NO_TLS,
        )

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

    def post_experiment(
        self, config_yaml: str, context_dir: Path | None, owner: str | None = None
    ) -> httpx.Response:
        """Submitted by the local user, or by the user named `owner` (made if new)."""
        context_id = self.upload(context_dir) if context_dir is not None else None
        body = {"config_yaml": config_yaml, "context_id": context_id}
        return (self.as_user(owner) if owner else self.http).post("/experiments", json=body)

    def as_user(self, username: str) -> httpx.Client:
        """A client with an API token of this user, whom the local user (an admin) makes
        on first use."""
        if username not in self._users:
            made = self.http.post("/users", json={"username": username})
            assert made.status_code in (201, 409), made.text
            r = self.http.post("/tokens", json={"username": username, "name": "tests"})
            assert r.status_code == 201, r.text
            self._users[username] = self._client(r.json()["token"])
        return self._users[username]

    def create(self, config_yaml: str, context_dir: Path | None, owner: str | None = None) -> dict:
        r = self.post_experiment(config_yaml, context_dir, owner)
        assert r.status_code == 201, r.text
        return r.json()

    def experiment(self, exp_id: int) -> dict:
        r = self.http.get(f"/experiments/{exp_id}")
        r.raise_for_status()
        return r.json()

    def wait(self, exp_id: int, timeout: float = 120, states=TERMINAL) -> dict:
        return poll(
            lambda: self.experiment(exp_id),
            f"experiment {exp_id} to be {' or '.join(sorted(states))}",
            until=lambda exp: exp["state"] in states,
            timeout_s=timeout,
            every_s=0.1,
            slow_to_s=0.3,
        )

    def wait_for(self, predicate, timeout: float = 60, what: str = "condition"):
        return poll(predicate, what, timeout_s=timeout)

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
        """`shipyard --master URL ARGS...` against this master (run in this process: see
        tests/fixtures/cli.py), with a terminal wide enough for whole table columns."""
        return run_cli("--master", self.url, *args, env={**os.environ, "COLUMNS": "200"})


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


@dataclass(frozen=True)
class Pool:
    """A resource pool the e2e tests run trial_code/steps.py on, with what every experiment
    on it says besides (its image, its max_restarts)."""

    name: str
    image: str | None = None
    max_restarts: int | None = None

    def config(self, name: str, hparams: str, searcher: str = SINGLE, extra: str = "") -> str:
        """An experiment of steps.py on this pool; ``extra``: more lines of config."""
        lines = [
            f"name: {name}",
            "entrypoint: python3 steps.py",
            f"hyperparameters: {hparams}",
            f"searcher: {searcher}",
            f"resources: {{resource_pool: {self.name}}}",
        ]
        if self.image:
            lines.append(f"environment: {{image: {self.image}}}")
        if self.max_restarts is not None:
            lines.append(f"max_restarts: {self.max_restarts}")
        return "\n".join(lines) + "\n" + extra

    def start_trial(
        self, master: Master, name: str, hparams: str, steps: int, extra: str = ""
    ) -> tuple[dict, int]:
        """A one-trial experiment on this pool and its trial's id, once it has trained
        ``steps`` steps."""
        exp = master.create(self.config(name, hparams, extra=extra), CODE)
        trials = master.wait_for(lambda: master.experiment(exp["id"])["trials"], what="the trial")
        trial_id = trials[0]["id"]
        master.wait_for(
            lambda: master.trial(trial_id)["steps_completed"] >= steps, timeout=60, what="steps"
        )
        return exp, trial_id


def random_search(master: Master, pool: Pool, trials: int, timeout: float) -> list[dict]:
    """A random search of ``trials`` trials at once on the pool, without restarts: 6 steps
    each, a checkpoint and a validation every 3. Checks what holds on every backend: all
    complete, one loss a step, each in one run on the pool's slots, its output in its log.
    Returns the trials."""
    searcher = f"{{name: random, metric: val_loss, max_trials: {trials}, "
    searcher += f"max_concurrent_trials: {trials}}}"
    exp = master.create(
        replace(pool, max_restarts=0).config(
            f"{pool.name}-random",
            "{x: {type: double, minval: -1, maxval: 1}, steps: 6, ckpt_every: 3}",
            searcher,
        ),
        CODE,
    )
    done = master.wait(exp["id"], timeout=timeout)
    assert done["state"] == "COMPLETED"
    assert [t["state"] for t in done["trials"]] == ["COMPLETED"] * trials
    found = []
    for summary in done["trials"]:
        trial = master.trial(summary["id"])
        assert [s for s, _ in master.metrics(trial["id"], "training", "loss")] == list(range(1, 7))
        assert [s for s, _ in master.metrics(trial["id"], "validation", "val_loss")] == [3, 6]
        [run] = trial["runs"]
        assert run["slots"][0].startswith(f"{pool.name}/cpu")
        assert run["ended_how"] == "exited with code 0; completed"
        assert "finished" in master.logs(trial["id"])
        found.append(trial)
    return found


def pause_then_resume(
    master: Master,
    exp_id: int,
    trial_id: int,
    first_run_ended: str = PREEMPTED,
    timeout: float = 120,
) -> dict:
    """Pause a running one-trial experiment, wait until the trial's run has ended, activate
    it again and wait until it completes; returns the trial. Checks what holds on every
    backend: two runs, the first ended as ``first_run_ended``, the second resumed from a
    checkpoint, and one training loss a step, none lost or doubled."""
    master.http.post(f"/experiments/{exp_id}/pause").raise_for_status()
    master.wait_for(
        lambda: master.trial(trial_id)["runs"][0].get("ended_how"), timeout=60, what="the stop"
    )
    master.http.post(f"/experiments/{exp_id}/activate").raise_for_status()
    assert master.wait(exp_id, timeout=timeout)["state"] == "COMPLETED"
    trial = master.trial(trial_id)
    assert len(trial["runs"]) == 2, trial["runs"]
    assert trial["restarts"] == 0  # a pause is not a failure
    assert trial["runs"][0]["ended_how"] == first_run_ended
    assert rerun_from_checkpoint(master, trial) >= trial["hparams"]["ckpt_every"]
    return trial


def restart_master(master: Master, exp_id: int, trial_id: int, timeout: float = 120) -> dict:
    """Stop the master while the trial runs and start it again: the new master re-attaches
    the trial, which completes in its one run (never resumed from a checkpoint) with one
    loss a step and its output in its log once, none lost or repeated. Returns the trial."""
    master.stop()
    master.start()
    assert master.wait(exp_id, timeout=timeout)["state"] == "COMPLETED"
    trial = master.trial(trial_id)
    assert len(trial["runs"]) == 1, trial["runs"]  # the same run, never relaunched
    steps = trial["hparams"]["steps"]
    assert [s for s, _ in master.metrics(trial_id, "training", "loss")] == list(range(1, steps + 1))
    logs = master.logs(trial_id)
    assert not any(line.startswith("resumed from step") for line in logs)
    assert logs.count("finished") == 1
    return trial


def resumed_from(master: Master, trial_id: int) -> int:
    """The step the trial's second run restored (tests/e2e/trial_code/steps.py prints it)."""
    line = next(line for line in master.logs(trial_id) if line.startswith("resumed from step"))
    return int(line.split()[-1])


def rerun_from_checkpoint(master: Master, trial: dict) -> int:
    """The step the trial's second run resumed from, having checked its training losses: one
    a step, none lost or doubled; up to the checkpoint the first run's, after it the rerun's."""
    resumed = resumed_from(master, trial["id"])
    steps = trial["hparams"]["steps"]
    losses = master.metrics(trial["id"], "training", "loss")
    assert [s for s, _ in losses] == list(range(1, steps + 1))
    runs = dict(master.metrics(trial["id"], "training", "run"))
    assert runs[resumed] == 1 and runs[resumed + 1] == 2 and runs[steps] == 2, runs
    return resumed


def image_search(doc_config: str, image: str) -> str:
    """The docs' experiment of two trials in an image (`name: in-an-image`): its trials read
    a file only the tests' marked image has, then train (steps.py, 3 steps)."""
    from tests.fixtures.containers import MARKER

    return (
        doc_config.replace("python3 train.py", f"sh -c 'cat {MARKER} && exec python3 steps.py'")
        .replace("localhost/train:1.4", image)
        .replace("hyperparameters: {", "hyperparameters: {steps: 3, ckpt_every: 3, ")
        + "max_restarts: 0\n"
    )


def ran_in_image(master: Master, done: dict, image: str, engine_env: dict) -> tuple[list, str]:
    """Check what a user would of a search whose trials ran in ``image`` through podman: all
    completed, each read the image's file and trained, each run records the image and its
    id. Returns the trials and the image's id."""
    from tests.fixtures.containers import MARKER_TEXT

    assert [t["state"] for t in done["trials"]] == ["COMPLETED"] * len(done["trials"]), done
    inspected = subprocess.run(
        ["podman", "image", "inspect", image],
        capture_output=True,
        text=True,
        env={**os.environ, **engine_env},
        check=True,
    )
    image_id = json.loads(inspected.stdout)[0]["Id"]
    trials = [master.trial(t["id"]) for t in done["trials"]]
    for trial in trials:
        logs = master.logs(trial["id"])
        assert MARKER_TEXT in logs and "finished" in logs, logs
        [run] = trial["runs"]
        assert run["environment"]["runtime"] == "podman"
        assert run["environment"]["image"] == image
        assert run["environment"]["image_id"] == image_id
    return trials, image_id
