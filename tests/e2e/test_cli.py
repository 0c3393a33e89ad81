"""The `shipyard` command as a user runs it, against a real master running real trials: in
the test's process (tests/fixtures/cli.py), or the installed entry point where a terminal or
a pipe is the point. Assertions are on exit codes and on what the user reads."""

from __future__ import annotations

import getpass
import json
import os
import pty
import queue
import re
import select
import subprocess
import sys
import threading
import time
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest

from tests.e2e.master import Master, free_port
from tests.fixtures.cli import run_cli

REPO = Path(__file__).resolve().parents[2]
CODE = Path(__file__).parent / "trial_code"
# `python -m shipyard.cli.main` exits 0 without doing anything (main.py has no __main__
# guard), so the tests run the console script, as a user does.
SHIPYARD = Path(sys.executable).parent / "shipyard"
TIMEOUT_S = 180  # generous: a command that hangs fails the test instead of the whole run

CRASHING = """\
name: cli-crash
entrypoint: python3 steps.py
hyperparameters: {steps: 5, crash_at: 1, crash_runs: 99}
searcher: {name: single, metric: val_loss}
max_restarts: 1
"""

STEPS_SEARCH = """\
name: cli-steps
entrypoint: python3 steps.py
hyperparameters:
  x: {type: double, minval: -1, maxval: 1}
  steps: 6
  ckpt_every: 3
searcher: {name: random, metric: val_loss, max_trials: 2, max_concurrent_trials: 2}
max_restarts: 0
"""


def gated_config(gate: Path, name: str = "cli-gated") -> str:
    """One trial of gated.py: it runs until the test creates the file `gate`."""
    return (
        f"name: {name}\n"
        "entrypoint: python3 gated.py\n"
        f"hyperparameters:\n  gate: {json.dumps(str(gate))}\n"
        "searcher: {name: single, metric: val_loss}\n"
        "max_restarts: 0\n"
    )


# -- running the command ------------------------------------------------------------------


def cli_env(master_url: str, home: Path, extra: dict[str, str] | None = None) -> dict[str, str]:
    """The test's environment without any SHIPYARD_ setting or terminal size of its own."""
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith("SHIPYARD_") and key not in ("COLUMNS", "LINES")
    }
    env.update(SHIPYARD_MASTER=master_url, SHIPYARD_HOME=str(home))
    env.update(extra or {})
    return env


@pytest.fixture(scope="module")
def master(tmp_path_factory):
    """One master for this module: each test works on experiments of its own."""
    m = Master(tmp_path_factory.mktemp("cli") / "home", slots=2).start()
    yield m
    m.stop()


@pytest.fixture(scope="module")
def cli_home(tmp_path_factory, master) -> Path:
    home = tmp_path_factory.mktemp("cli-home")
    master.keep_token_in(home)  # the user logged in from this home
    return home


@pytest.fixture(scope="module")
def env(master, cli_home):
    def make(extra: dict[str, str] | None = None, master_url: str | None = None):
        return cli_env(master_url or master.url, cli_home, extra)

    return make


@pytest.fixture(scope="module")
def shipyard(env):
    """Run `shipyard ARGS...` (from the repository root); returns the CompletedProcess."""

    def run(*args, extra_env: dict[str, str] | None = None, master_url: str | None = None):
        return run_cli(*args, cwd=REPO, env=env(extra_env, master_url))

    return run


def ok(result: subprocess.CompletedProcess) -> subprocess.CompletedProcess:
    assert result.returncode == 0, f"exit {result.returncode}\n{result.stdout}\n{result.stderr}"
    assert "Traceback" not in result.stderr
    return result


def failed(result: subprocess.CompletedProcess) -> str:
    """A user error: exit code 1, a message on stderr, nothing on stdout, no traceback."""
    assert result.returncode == 1, f"exit {result.returncode}\n{result.stdout}\n{result.stderr}"
    assert "Traceback" not in result.stderr, result.stderr
    assert result.stdout == ""
    assert result.stderr.startswith("error: "), result.stderr
    return result.stderr


def as_json(result: subprocess.CompletedProcess):
    return json.loads(ok(result).stdout)


def created_id(result: subprocess.CompletedProcess) -> int:
    match = re.search(r"^Created experiment (\d+)$", result.stdout, re.M)
    assert match, result.stdout
    return int(match.group(1))


def table_rows(text: str) -> list[list[str]]:
    """The cells of each body row of the rich tables in text (rows that start with an id)."""
    rows = []
    for line in text.splitlines():
        if line.startswith("│"):
            cells = [cell.strip() for cell in line.split("│")[1:-1]]
            if cells and cells[0]:
                rows.append(cells)
    return rows


def write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def create(shipyard, config: Path, context: Path, *extra: str) -> int:
    return created_id(ok(shipyard("experiment", "create", config, context, *extra)))


def only_trial(master, exp_id: int) -> int:
    trials = master.wait_for(lambda: master.experiment(exp_id)["trials"], what="the trial")
    return trials[0]["id"]


def wait_at_gate(master, trial_id: int, run_id: int = 1) -> None:
    """Until gated.py's process is running and has printed that it waits."""
    line = f"waiting at the gate in run {run_id}"
    master.wait_for(lambda: line in master.logs(trial_id), timeout=90, what=line)


class LineReader:
    """Reads a subprocess's stdout in a thread, so the test can wait for a line with a timeout."""

    def __init__(self, stream) -> None:
        self.queue: queue.Queue[str | None] = queue.Queue()
        self.lines: list[str] = []
        threading.Thread(target=self._pump, args=(stream,), daemon=True).start()

    def _pump(self, stream) -> None:
        for line in stream:
            self.queue.put(line.rstrip("\n"))
        self.queue.put(None)

    def wait_for(self, text: str, timeout: float = 90) -> None:
        deadline = time.monotonic() + timeout
        while True:
            try:
                line = self.queue.get(timeout=max(deadline - time.monotonic(), 0.001))
            except queue.Empty:
                raise AssertionError(
                    f"no line with {text!r} in {timeout} s: {self.lines}"
                ) from None
            if line is None:
                raise AssertionError(f"output ended without {text!r}: {self.lines}")
            self.lines.append(line)
            if text in line:
                return

    def rest(self, timeout: float = 90) -> list[str]:
        """Every line until the stream ends (call after the process has exited)."""
        while (line := self.queue.get(timeout=timeout)) is not None:
            self.lines.append(line)
        return self.lines


# -- experiments shared by several tests (created through the CLI) -----------------------


@pytest.fixture(scope="module")
def random_search(shipyard):
    """The README's tour: the quadratic random search, followed until it ends."""
    result = shipyard(
        "experiment", "create", "examples/quadratic/random.yaml", "examples/quadratic", "--follow"
    )
    return result, created_id(result)


@pytest.fixture(scope="module")
def errored(shipyard, tmp_path_factory):
    """A trial that crashes on every run: ERRORED once its one restart is used."""
    config = write(tmp_path_factory.mktemp("crash") / "crash.yaml", CRASHING)
    result = shipyard("experiment", "create", config, CODE, "--follow")
    return result, created_id(result)


@pytest.fixture(scope="module")
def steps_search(shipyard, tmp_path_factory) -> int:
    """Two completed trials of steps.py, which print "finished" at their end."""
    config = write(tmp_path_factory.mktemp("steps") / "steps.yaml", STEPS_SEARCH)
    exp_id = create(shipyard, config, CODE)
    waited = ok(shipyard("experiment", "wait", exp_id, "--timeout", "120"))
    assert f"Experiment {exp_id} COMPLETED" in waited.stdout
    return exp_id


# -- 1. create --follow ---------------------------------------------------------------------


def test_create_follow_runs_a_random_search_to_completion(random_search, master):
    result, exp_id = random_search
    ok(result)
    assert f"experiment {exp_id}: COMPLETED" in result.stdout  # one line per state change
    final = result.stdout.split(f"Experiment {exp_id} quadratic-random COMPLETED", 1)
    assert len(final) == 2, result.stdout  # the final view: heading, then the trials table
    assert "progress 100%" in final[1]
    rows = table_rows(final[1])
    expected = {t["id"] for t in master.experiment(exp_id)["trials"]}
    assert len(expected) == 8
    assert {int(row[0]) for row in rows} == expected
    assert all(row[1] == "COMPLETED" and row[3] == "100" for row in rows), rows


def test_create_follow_of_a_crashing_trial_exits_nonzero_and_says_errored(errored, master):
    result, exp_id = errored
    assert result.returncode == 1, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    assert f"experiment {exp_id}: ERRORED" in result.stdout
    assert f"Experiment {exp_id} cli-crash ERRORED" in result.stdout
    rows = table_rows(result.stdout.split(f"Experiment {exp_id} cli-crash ERRORED", 1)[1])
    trial_id = master.experiment(exp_id)["trials"][0]["id"]
    assert [(int(r[0]), r[1], r[6]) for r in rows] == [(trial_id, "ERRORED", "1")]


def test_create_follow_on_a_terminal_shows_the_final_table(env, master):
    """On a terminal --follow draws a live table; what stays on screen is the final one."""
    main_fd, sub_fd = pty.openpty()
    proc = subprocess.Popen(
        [
            str(SHIPYARD),
            "experiment",
            "create",
            "examples/quadratic/const.yaml",
            "examples/quadratic",
            "--follow",
        ],
        stdin=sub_fd,
        stdout=sub_fd,
        stderr=sub_fd,
        cwd=REPO,
        env=env({"TERM": "xterm"}),
        close_fds=True,
    )
    os.close(sub_fd)
    chunks: list[bytes] = []
    deadline = time.monotonic() + TIMEOUT_S
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([main_fd], [], [], 1.0)
            if not ready:
                continue
            try:
                data = os.read(main_fd, 65536)
            except OSError:  # EIO: the command exited and the terminal closed
                break
            if not data:
                break
            chunks.append(data)
        code = proc.wait(timeout=60)
    finally:
        os.close(main_fd)
        if proc.poll() is None:
            proc.kill()
    screen = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", b"".join(chunks).decode(errors="replace"))
    assert code == 0, screen
    assert "Traceback" not in screen
    exp_id = int(re.search(r"Created experiment (\d+)", screen).group(1))
    assert master.experiment(exp_id)["state"] == "COMPLETED"
    assert f"Experiment {exp_id} quadratic-const COMPLETED" in screen


# -- 2. list, describe, --json --------------------------------------------------------------


def test_experiment_list_and_describe_show_states_and_ids(shipyard, random_search, errored):
    done_id, errored_id = random_search[1], errored[1]

    listed = {int(r[0]): r for r in table_rows(ok(shipyard("experiment", "list")).stdout)}
    me = getpass.getuser()  # the CLI says who submits: the login name
    assert listed[done_id][1:4] == ["quadratic-random", me, "COMPLETED"]
    assert listed[errored_id][1:4] == ["cli-crash", me, "ERRORED"]

    experiments = as_json(shipyard("experiment", "list", "--json"))
    ids = [e["id"] for e in experiments]
    assert ids == sorted(ids, reverse=True)  # newest first
    states = {e["id"]: e["state"] for e in experiments}
    assert states[done_id] == "COMPLETED" and states[errored_id] == "ERRORED"

    only_errored = as_json(shipyard("experiment", "list", "--state", "errored", "--json"))
    assert errored_id in [e["id"] for e in only_errored]
    assert {e["state"] for e in only_errored} == {"ERRORED"}

    detail = as_json(shipyard("experiment", "describe", done_id, "--json"))
    assert (detail["id"], detail["state"], detail["name"], detail["owner"]) == (
        done_id,
        "COMPLETED",
        "quadratic-random",
        me,
    )
    assert detail["num_trials"] == len(detail["trials"]) == 8
    assert {t["state"] for t in detail["trials"]} == {"COMPLETED"}
    best = min(detail["trials"], key=lambda t: t["best_validation"])
    assert detail["best_validation"] == pytest.approx(best["best_validation"])
    assert detail["best_trial_id"] in {t["id"] for t in detail["trials"]}

    shown = ok(shipyard("experiment", "describe", done_id)).stdout
    assert re.search(r"^State\s+COMPLETED\s*$", shown, re.M), shown
    assert re.search(r"^Trials\s+8 \(COMPLETED 8\)\s*$", shown, re.M), shown
    assert f"(trial {detail['best_trial_id']})" in shown
    assert {int(r[0]) for r in table_rows(shown)} == {t["id"] for t in detail["trials"]}

    crashed = as_json(shipyard("experiment", "describe", errored_id, "--json"))
    assert crashed["state"] == "ERRORED"
    assert [t["state"] for t in crashed["trials"]] == ["ERRORED"]


def test_trial_describe_of_an_errored_trial_shows_its_last_log_lines(shipyard, errored, master):
    trial_id = master.experiment(errored[1])["trials"][0]["id"]
    shown = ok(shipyard("trial", "describe", trial_id)).stdout
    assert re.search(r"^State\s+ERRORED\s*$", shown, re.M), shown
    assert "no restarts left" in shown  # the exit reason
    tail = shown.split("Last log lines", 1)
    assert len(tail) == 2, shown
    assert "boom at step 1 in run 1" in tail[1]
    assert tail[1].strip().splitlines()[-1] == "boom at step 1 in run 2"

    detail = as_json(shipyard("trial", "describe", trial_id, "--json"))
    assert (detail["id"], detail["state"], detail["restarts"]) == (trial_id, "ERRORED", 1)
    assert detail["last_log_lines"][-1] == "boom at step 1 in run 2"


# -- 3. logs --------------------------------------------------------------------------------


def test_trial_logs_and_experiment_logs_print_the_trials_output(shipyard, steps_search, master):
    trial_ids = [t["id"] for t in master.experiment(steps_search)["trials"]]
    assert len(trial_ids) == 2

    lines = ok(shipyard("trial", "logs", trial_ids[0])).stdout.splitlines()
    assert lines == master.logs(trial_ids[0])
    assert lines[-1] == "finished"

    as_objects = ok(shipyard("trial", "logs", trial_ids[0], "--json")).stdout.splitlines()
    assert [json.loads(o)["text"] for o in as_objects] == lines
    assert {json.loads(o)["trial_id"] for o in as_objects} == {trial_ids[0]}

    every = ok(shipyard("experiment", "logs", steps_search)).stdout.splitlines()
    for trial_id in trial_ids:
        assert f"[trial {trial_id}] finished" in every
    assert all(line.startswith("[trial ") for line in every), every


def test_trial_logs_follow_ends_when_the_trial_ends(env, shipyard, master, tmp_path):
    gate = tmp_path / "gate"
    exp_id = create(shipyard, write(tmp_path / "gated.yaml", gated_config(gate)), CODE)
    trial_id = only_trial(master, exp_id)
    wait_at_gate(master, trial_id)

    proc = subprocess.Popen(
        [str(SHIPYARD), "trial", "logs", str(trial_id), "--follow"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env(),
    )
    try:
        reader = LineReader(proc.stdout)
        reader.wait_for("waiting at the gate in run 1")  # written before following began
        gate.touch()  # the trial goes on, prints more, and ends
        code = proc.wait(timeout=TIMEOUT_S)  # --follow must end by itself
    finally:
        gate.touch()
        if proc.poll() is None:
            proc.kill()
    stderr = proc.stderr.read()
    assert code == 0, stderr
    assert "Traceback" not in stderr
    assert reader.rest() == ["waiting at the gate in run 1", "through the gate", "finished"]
    assert master.trial(trial_id)["state"] == "COMPLETED"


# -- 4. pause, activate, kill ---------------------------------------------------------------


def test_pause_activate_and_kill_a_running_experiment(shipyard, master, tmp_path):
    gate = tmp_path / "never-created"
    exp_id = create(shipyard, write(tmp_path / "gated.yaml", gated_config(gate)), CODE)
    trial_id = only_trial(master, exp_id)
    try:
        wait_at_gate(master, trial_id)

        assert ok(shipyard("experiment", "pause", exp_id)).stdout.strip() == (
            f"Experiment {exp_id} is PAUSED"
        )
        master.wait_for(lambda: master.trial(trial_id)["state"] == "PAUSED", what="PAUSED")
        assert "preempted at the gate" in master.logs(trial_id)
        assert master.experiment(exp_id)["state"] == "PAUSED"

        assert ok(shipyard("experiment", "activate", exp_id)).stdout.strip() == (
            f"Experiment {exp_id} is ACTIVE"
        )
        wait_at_gate(master, trial_id, run_id=2)  # running again, as a new run
        assert master.trial(trial_id)["state"] == "RUNNING"

        killed = as_json(shipyard("experiment", "kill", exp_id, "--json"))
        assert killed == {"id": exp_id, "state": "CANCELED"}
        master.wait_for(lambda: master.trial(trial_id)["state"] == "CANCELED", what="CANCELED")
    finally:
        master.http.post(f"/experiments/{exp_id}/kill")
    final = master.experiment(exp_id)
    assert final["state"] == "CANCELED"
    assert [t["state"] for t in final["trials"]] == ["CANCELED"]


def test_a_completed_experiment_cannot_change_state(shipyard, random_search):
    exp_id = random_search[1]
    for verb, action in (("pause", "paused"), ("kill", "killed")):
        message = failed(shipyard("experiment", verb, exp_id))
        assert f"experiment {exp_id} is COMPLETED; it cannot be {action}" in message


# -- 5. checkpoints -------------------------------------------------------------------------


def test_checkpoint_list_and_download(shipyard, random_search, master, tmp_path):
    exp_id = random_search[1]
    checkpoints = as_json(shipyard("checkpoint", "list", exp_id, "--json"))
    trial_ids = {t["id"] for t in master.experiment(exp_id)["trials"]}
    assert {c["trial_id"] for c in checkpoints} == trial_ids  # each trial keeps its latest
    assert {c["experiment_id"] for c in checkpoints} == {exp_id}
    # Every trial keeps its latest checkpoint (step 100), and its best when that is earlier.
    latest = {c["trial_id"] for c in checkpoints if c["steps_completed"] == 100}
    assert latest == trial_ids
    assert {c["steps_completed"] for c in checkpoints} <= {25, 50, 75, 100}

    rows = table_rows(ok(shipyard("checkpoint", "list", exp_id)).stdout)
    assert {r[0] for r in rows} == {c["uuid"] for c in checkpoints}

    chosen = next(c for c in checkpoints if c["steps_completed"] == 100)
    dest = tmp_path / "ckpt"
    result = ok(shipyard("checkpoint", "download", chosen["uuid"], dest))
    assert f"Downloaded checkpoint {chosen['uuid']} (2 files) to {dest}" in result.stdout
    assert sorted(p.name for p in dest.iterdir()) == ["metadata.json", "state.json"]
    assert json.loads((dest / "state.json").read_text())["step"] == 100
    metadata = json.loads((dest / "metadata.json").read_text())
    assert metadata["uuid"] == chosen["uuid"] and metadata["steps_completed"] == 100


# -- 6. bad input ---------------------------------------------------------------------------


def test_config_validate_points_at_the_line_and_column_of_malformed_yaml(shipyard, tmp_path):
    config = write(
        tmp_path / "malformed.yaml",
        "name: bad\n"
        "entrypoint: python3 steps.py\n"
        "hyperparameters:\n"
        "  steps: 3\n"
        "    x: 1\n"  # line 5: a mapping under a scalar
        "searcher: {name: single, metric: val_loss}\n",
    )
    message = failed(shipyard("config", "validate", config))
    assert "malformed.yaml is not valid YAML" in message
    assert "line 5, column 6" in message


def test_config_validate_names_an_unknown_field_and_suggests_one(shipyard, tmp_path):
    top = write(
        tmp_path / "top.yaml",
        "name: typo\n"
        "entrypoint: python3 steps.py\n"
        "hyperparameters: {steps: 3}\n"
        "searcher: {name: single, metric: val_loss}\n"
        "max_restart: 3\n",
    )
    message = failed(shipyard("config", "validate", top))
    assert "max_restart (line 5, column 1): unknown field 'max_restart'" in message
    assert "did you mean 'max_restarts'?" in message

    nested = write(
        tmp_path / "nested.yaml",
        "name: typo\n"
        "entrypoint: python3 steps.py\n"
        "hyperparameters: {steps: 3}\n"
        "searcher:\n"
        "  name: random\n"
        "  metric: val_loss\n"
        "  max_trails: 3\n",
    )
    message = failed(shipyard("config", "validate", nested))
    assert "searcher.max_trails (line 7, column 3)" in message
    assert "did you mean 'max_trials'?" in message


def test_create_with_the_entrypoint_missing_from_the_context_creates_nothing(
    shipyard, master, tmp_path
):
    context = tmp_path / "code"
    context.mkdir()
    (context / "other.py").write_text(f"print('not the entrypoint {tmp_path.name}')\n")
    config = write(
        tmp_path / "missing.yaml",
        "name: missing\n"
        "entrypoint: python3 train_missing.py\n"
        "hyperparameters: {steps: 3}\n"
        "searcher: {name: single, metric: val_loss}\n",
    )
    before = master.http.get("/experiments").json()
    contexts = master.home / "contexts"
    uploaded = sorted(contexts.iterdir()) if contexts.is_dir() else []

    message = failed(shipyard("experiment", "create", config, context))
    assert "train_missing.py" in message

    assert master.http.get("/experiments").json() == before
    assert (sorted(contexts.iterdir()) if contexts.is_dir() else []) == uploaded  # not sent


def test_create_with_a_context_over_the_size_limit_names_the_largest_file(
    shipyard, master, tmp_path
):
    context = tmp_path / "code"
    context.mkdir()
    (context / "steps.py").write_text((CODE / "steps.py").read_text())
    (context / "weights.bin").write_bytes(b"\0" * (2 * 2**20))
    config = write(
        tmp_path / "big.yaml",
        "name: big\n"
        "entrypoint: python3 steps.py\n"
        "hyperparameters: {steps: 3}\n"
        "searcher: {name: single, metric: val_loss}\n",
    )
    before = master.http.get("/experiments").json()

    result = shipyard(
        "experiment", "create", config, context, extra_env={"SHIPYARD_MAX_CONTEXT_MB": "1"}
    )
    message = failed(result)
    assert "over the limit of 1.0 MiB" in message
    assert "Largest files: weights.bin (2.0 MiB)" in message
    assert master.http.get("/experiments").json() == before


def test_describe_a_missing_experiment_says_it_does_not_exist(shipyard):
    assert "experiment 999 does not exist" in failed(shipyard("experiment", "describe", "999"))


def test_a_master_that_does_not_answer_tells_the_user_to_run_shipyard_up(shipyard):
    url = f"http://127.0.0.1:{free_port()}"
    message = failed(shipyard("experiment", "list", master_url=url))
    assert f"cannot reach the Shipyard master at {url}" in message
    assert "`shipyard up`" in message


# -- 7. status ------------------------------------------------------------------------------


def test_status_lists_the_slots_and_the_trial_holding_one(shipyard, master, tmp_path):
    gate = tmp_path / "gate"
    exp_id = create(shipyard, write(tmp_path / "gated.yaml", gated_config(gate)), CODE)
    trial_id = only_trial(master, exp_id)
    try:
        wait_at_gate(master, trial_id)
        status = as_json(shipyard("status", "--json"))
        assert status["url"] == master.url
        assert [s["id"] for s in status["slots"]] == ["cpu0", "cpu1"]
        held = [s for s in status["slots"] if s["trial_id"] == trial_id]
        assert len(held) == 1 and held[0]["experiment_id"] == exp_id
        assert held[0]["pool"] == "default"

        shown = ok(shipyard("status")).stdout
        assert re.search(rf"^URL\s+{re.escape(master.url)}\s*$", shown, re.M), shown
        slots = {row[0]: row for row in table_rows(shown)}
        assert set(slots) == {"cpu0", "cpu1"}
        slot_row = [held[0]["id"], "cpu", "cpu", "default", str(trial_id), str(exp_id)]
        assert slots[held[0]["id"]] == slot_row
        assert re.search(r"^Trials: .*RUNNING [1-9]", shown, re.M), shown
    finally:
        gate.touch()
    assert master.wait(exp_id)["state"] == "COMPLETED"
    assert trial_id not in [s["trial_id"] for s in master.http.get("/slots").json()]


# -- bugs found by these tests --------------------------------------------------------------


def test_times_are_shown_in_the_users_time_zone(shipyard, random_search, master):
    exp_id = random_search[1]
    created = datetime.fromisoformat(master.experiment(exp_id)["created_at"])
    if created.tzinfo is None:
        created = created.replace(tzinfo=UTC)  # the master records UTC
    tokyo = timezone(timedelta(hours=9))  # no daylight saving time
    shown = ok(shipyard("experiment", "describe", exp_id, extra_env={"TZ": "Asia/Tokyo"})).stdout
    match = re.search(r"^Created\s+(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)", shown, re.M)
    assert match, shown
    assert match.group(1) == created.astimezone(tokyo).strftime("%Y-%m-%d %H:%M:%S")


def test_a_config_that_is_not_utf8_is_a_message_not_a_traceback(shipyard, tmp_path):
    config = tmp_path / "latin1.yaml"
    config.write_bytes(
        (
            "name: latin1\n"
            "description: première expérience\n"
            "entrypoint: python3 steps.py\n"
            "hyperparameters: {steps: 3}\n"
            "searcher: {name: single, metric: val_loss}\n"
        ).encode("latin-1")
    )
    message = failed(shipyard("config", "validate", config))
    assert "latin1.yaml" in message and "UTF-8" in message.upper()


def test_logs_piped_into_head_end_quietly(shipyard, env, master, tmp_path):
    config = write(
        tmp_path / "chatty.yaml",
        "name: chatty\n"
        "entrypoint: python3 chatty.py\n"
        "hyperparameters: {lines: 3000}\n"  # ~230 KB: more than a pipe holds
        "searcher: {name: single, metric: val_loss}\n",
    )
    exp_id = create(shipyard, config, CODE)
    assert master.wait(exp_id)["state"] == "COMPLETED"
    proc = subprocess.Popen(
        [str(SHIPYARD), "experiment", "logs", str(exp_id)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env(),
    )
    first = proc.stdout.readline()
    proc.stdout.close()  # what `| head -1` does after its first line
    stderr = proc.stderr.read()
    proc.wait(timeout=TIMEOUT_S)
    assert first.startswith("[trial ") and "line 000000" in first
    assert stderr == ""


def test_checkpoint_download_of_a_uuid_with_a_slash_says_it_does_not_exist(shipyard, tmp_path):
    message = failed(shipyard("checkpoint", "download", "not/a-uuid", tmp_path / "dest"))
    assert "checkpoint 'not/a-uuid' does not exist" in message or (
        "not/a-uuid" in message and "does not exist" in message
    )
    assert not (tmp_path / "dest").exists()
