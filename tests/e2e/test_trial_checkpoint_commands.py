"""The everyday trial and checkpoint commands Determined users know, against one real master
running short real trials: `trial kill`, `trial logs --head/--tail/--since/--grep`,
`checkpoint download --best/--latest`, `checkpoint describe / delete`, `--csv` on lists,
the short aliases (`shipyard e list`, `shipyard t logs 3`) and shell completion. Assertions
are on exit codes and on what a user reads."""

from __future__ import annotations

import csv
import io
import json
import os
import pty
import re
import select
import subprocess
from pathlib import Path

import pytest

from tests.e2e.master import CODE, SHIPYARD, SINGLE, Master
from tests.fixtures.cli import run_cli

CHATTY_LINES = 1500

# Two trials of steps.py with checkpoints at steps 2, 4 and 6, and a searcher that maximizes
# val_loss (x² + 1/step): each trial's best checkpoint is its first, its latest its last;
# the experiment's best is the x=0.9 trial's step 2 (0.81 + 0.5).
STEPS = """\
name: tc-steps
entrypoint: python3 steps.py
hyperparameters:
  x: {type: categorical, vals: [0.1, 0.9]}
  steps: 6
  ckpt_every: 2
searcher: {name: grid, metric: val_loss, smaller_is_better: false, max_concurrent_trials: 2}
max_restarts: 0
"""

CHATTY = f"""\
name: tc-chatty
entrypoint: python3 chatty.py
hyperparameters: {{lines: {CHATTY_LINES}}}
searcher: {{name: single, metric: val_loss}}
max_restarts: 0
"""


def gated(gate: Path) -> str:
    """Two trials of checkpoint_gate.py: each checkpoints step 1, then waits at `gate`.1
    before its step-2 checkpoint (running, with a checkpoint it would resume from)."""
    return (
        "name: tc-gated\n"
        "entrypoint: python3 checkpoint_gate.py\n"
        "hyperparameters:\n"
        "  steps: 2\n"
        "  ckpt_every: 1\n"
        "  ckpt_bytes: {type: categorical, vals: [10, 20]}\n"
        f"  gate: {json.dumps(str(gate))}\n"
        "  gate_step: 2\n"
        "searcher: {name: grid, metric: val_loss, max_concurrent_trials: 2}\n"
        "max_restarts: 0\n"
    )


@pytest.fixture(scope="module")
def master(tmp_path_factory):
    """One master for the module, with a slot for each trial of the first two experiments
    (they then run at once)."""
    m = Master(tmp_path_factory.mktemp("trial_checkpoint_commands") / "home", slots=3).start()
    yield m
    m.stop()


@pytest.fixture(scope="module")
def finished(master: Master) -> dict:
    """The steps experiment and the chatty one, both submitted first and run to the end."""
    steps = master.create(STEPS, CODE)
    chatty = master.create(CHATTY, CODE)
    done = master.wait(steps["id"], timeout=120)
    assert done["state"] == "COMPLETED", done
    talk = master.wait(chatty["id"], timeout=120)
    assert talk["state"] == "COMPLETED", talk
    trials = {t["hparams"]["x"]: t["id"] for t in done["trials"]}
    # Retention deletes checkpoints on the master's housekeeping pass after the trials end:
    # wait until the storage holds just the ones listed, so the tests' listings hold still.
    master.wait_for(
        lambda: retention_done(master, [steps["id"], chatty["id"]]), what="retention's pass"
    )
    return {"exp": steps["id"], "trials": trials, "chatty": talk["trials"][0]["id"]}


def retention_done(master: Master, exp_ids: list[int]) -> bool:
    listed = [c for exp_id in exp_ids for c in checkpoints_of(master, exp_id)]
    root = Path(listed[0]["storage_path"]).parent
    # Not .writing, nor the trials' TensorBoard files.
    stored = {p.name for p in root.iterdir() if p.name[0] != "." and p.name != "tensorboard"}
    return stored == {c["uuid"] for c in listed}


def ok(result: subprocess.CompletedProcess) -> str:
    assert result.returncode == 0, (result.stdout, result.stderr)
    assert "Traceback" not in result.stderr
    return result.stdout


def failed(result: subprocess.CompletedProcess, code: int = 1) -> str:
    assert result.returncode == code, (result.stdout, result.stderr)
    assert "Traceback" not in result.stderr
    return result.stderr


def checkpoints_of(master: Master, exp_id: int) -> list[dict]:
    return json.loads(ok(master.cli("checkpoint", "list", exp_id, "--json")))


def stored_files(root: Path) -> dict[str, bytes]:
    """Every file under the checkpoint storage, by path."""
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
    }


# -- --csv ---------------------------------------------------------------------------------


def rows(text: str) -> list[list[str]]:
    return list(csv.reader(io.StringIO(text)))


def test_lists_print_csv_with_the_tables_columns(master, finished):
    trials = rows(ok(master.cli("trial", "list", "--csv")))
    assert trials[0] == ["ID", "Experiment", "State", "Restarts", "Steps", "Ended", "Why it ended"]
    listed = {int(row[0]): row for row in trials[1:]}
    for trial_id in finished["trials"].values():
        assert listed[trial_id][2] == "COMPLETED"
        assert listed[trial_id][1] == f"tc-steps ({finished['exp']})"

    ckpts = rows(ok(master.cli("checkpoint", "list", finished["exp"], "--csv")))
    assert ckpts[0] == ["UUID", "Trial", "Steps", "Validation", "Size", "State", "Created"]
    assert {row[0] for row in ckpts[1:]} == {
        c["uuid"] for c in checkpoints_of(master, finished["exp"])
    }

    trial_id = finished["trials"][0.9]
    own = rows(ok(master.cli("trial", "checkpoints", trial_id, "--csv")))
    assert own[0][0] == "UUID" and all(row[1] == str(trial_id) for row in own[1:])

    pools = rows(ok(master.cli("pool", "list", "--csv")))
    assert pools[0] == ["Pool", "Backend", "Slots used", "Scheduler", "Health"] and len(pools) > 1
    jobs = rows(ok(master.cli("job", "list", "--csv")))
    assert jobs[0][:3] == ["#", "Trial", "Experiment"]  # the header, even with nothing queued

    message = failed(master.cli("trial", "list", "--csv", "--json"))
    assert "choose one of --json and --csv" in message


# -- trial logs ----------------------------------------------------------------------------


def chatty_line(i: int) -> str:
    return f"line {i:06d} of a chatty trial, padded to make the output long enough"


def test_trial_logs_head_tail_grep_and_since(master, finished):
    trial_id = finished["chatty"]
    head = ok(master.cli("t", "logs", trial_id, "--grep", "of a chatty", "--head", "3"))
    assert head.splitlines() == [chatty_line(i) for i in range(3)]

    tail = ok(master.cli("trial", "logs", trial_id, "--grep", "chatty", "--tail", "2"))
    assert tail.splitlines() == [chatty_line(CHATTY_LINES - 2), chatty_line(CHATTY_LINES - 1)]

    # An ended trial followed from its tail: the tail, then the end (nothing hangs).
    followed = ok(master.cli("trial", "logs", trial_id, "--tail", "1", "-f", "--grep", "line"))
    assert followed.splitlines() == [chatty_line(CHATTY_LINES - 1)]

    grepped = ok(master.cli("trial", "logs", trial_id, "--grep", "line 0012"))
    assert grepped.splitlines() == [chatty_line(i) for i in range(1200, 1300)]
    as_json = ok(master.cli("trial", "logs", trial_id, "--grep", "line 0014", "--json"))
    assert [json.loads(line)["text"] for line in as_json.splitlines()] == [
        chatty_line(i) for i in range(1400, 1500)
    ]

    recent = ok(master.cli("trial", "logs", trial_id, "--since", "1d", "--grep", "chatty"))
    assert len(recent.splitlines()) == CHATTY_LINES
    assert ok(master.cli("trial", "logs", trial_id, "--since", "2999-01-01T00:00:00Z")) == ""


def test_the_master_filters_the_lines_it_sends(master, finished):
    """Only the lines the filters keep cross the network."""
    trial_id = finished["chatty"]
    page = master.http.get(f"/trials/{trial_id}/logs", params={"grep": "line 0012"}).json()
    assert [line["text"] for line in page["lines"]] == [chatty_line(i) for i in range(1200, 1300)]
    assert page["done"]
    tail = master.http.get(f"/trials/{trial_id}/logs", params={"tail": 3}).json()
    assert len(tail["lines"]) == 3 and tail["lines"][-1]["text"] == chatty_line(CHATTY_LINES - 1)
    assert tail["next_after"] == tail["lines"][-1]["id"]
    bad = master.http.get(f"/trials/{trial_id}/logs", params={"since": "yesterday"})
    assert bad.status_code == 400 and "since" in bad.text


@pytest.mark.parametrize(
    ("args", "code", "words"),
    [
        (["--since", "yesterday"], 2, "neither a duration"),
        (["--since", "99999999999d"], 2, "goes back too far"),
        (["--head", "0"], 2, "--head"),
        (["--tail", "0"], 2, "--tail"),
        (["--head", "3", "--tail", "3"], 1, "choose one of --head and --tail"),
        (["--head", "3", "-f"], 1, "cannot be used with --follow"),
        (["--grep", ""], 2, "give a text"),
    ],
)
def test_trial_logs_bad_values_say_what_is_wrong(master, finished, args, code, words):
    message = failed(master.cli("trial", "logs", finished["chatty"], *args), code)
    assert words in message


# -- checkpoints ---------------------------------------------------------------------------


def test_checkpoint_download_best_and_latest(master, finished, tmp_path):
    exp_id, trial_id = finished["exp"], finished["trials"][0.9]
    best = ok(master.cli("c", "download", "--best", "--experiment", exp_id, tmp_path / "best"))
    assert f"(trial {trial_id}, step 2, validation 1.31)" in best
    assert json.loads((tmp_path / "best" / "state.json").read_text()) == {"step": 2}

    latest = ok(master.cli("checkpoint", "download", "--latest", "-t", trial_id, tmp_path / "l"))
    assert f"(trial {trial_id}, step 6," in latest
    assert json.loads((tmp_path / "l" / "state.json").read_text()) == {"step": 6}

    # Best of the other trial, as JSON (no progress bar, nothing but JSON on stdout).
    other = finished["trials"][0.1]
    shown = json.loads(
        ok(master.cli("c", "download", "--best", "--trial", other, tmp_path / "o", "--json"))
    )
    assert shown["checkpoint"]["trial_id"] == other
    assert shown["checkpoint"]["steps_completed"] == 2
    assert "state.json" in shown["files"] and shown["path"] == str(tmp_path / "o")

    # By UUID, into checkpoints/UUID by default (Determined's default directory).
    uuid = shown["checkpoint"]["uuid"]
    result = run_cli("--master", master.url, "checkpoint", "download", uuid, cwd=tmp_path)
    ok(result)
    assert (tmp_path / "checkpoints" / uuid / "state.json").is_file()


def on_a_terminal(master: Master, *args: object) -> tuple[int, str, str]:
    """The installed command with stderr on a terminal (pty) and stdout piped: its exit
    code, stdout, and the terminal's text without escape sequences."""
    main_fd, sub_fd = pty.openpty()
    proc = subprocess.Popen(
        [str(SHIPYARD), "--master", master.url, *map(str, args)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=sub_fd,
        env={**os.environ, "TERM": "xterm", "COLUMNS": "120"},
        close_fds=True,
    )
    os.close(sub_fd)
    chunks: list[bytes] = []
    try:
        while True:
            ready, _, _ = select.select([main_fd], [], [], 60)
            if not ready:
                break
            try:
                data = os.read(main_fd, 65536)
            except OSError:  # EIO: the command exited and the terminal closed
                break
            if not data:
                break
            chunks.append(data)
        stdout = proc.communicate(timeout=60)[0].decode()
    finally:
        os.close(main_fd)
        if proc.poll() is None:
            proc.kill()
    screen = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", b"".join(chunks).decode(errors="replace"))
    return proc.returncode, stdout, screen


def test_download_shows_a_progress_bar_only_on_a_terminal(master, finished, tmp_path):
    """stderr a terminal: the bar (then gone); stderr a pipe (every other test): nothing."""
    uuid = checkpoints_of(master, finished["exp"])[0]["uuid"]
    piped = master.cli("checkpoint", "download", uuid, tmp_path / "piped")
    assert ok(piped).startswith("Downloaded") and piped.stderr == ""
    code, stdout, screen = on_a_terminal(master, "checkpoint", "download", uuid, tmp_path / "tty")
    assert code == 0 and stdout.startswith(f"Downloaded checkpoint {uuid}")
    assert f"checkpoint {uuid[:8]}" in screen and "bytes" in screen


def test_create_shows_the_code_uploads_progress_only_on_a_terminal(master, tmp_path):
    config = tmp_path / "paused.yaml"
    config.write_text(
        "name: upload-bar\nentrypoint: python3 steps.py\nhyperparameters: {steps: 1}\n"
        f"searcher: {SINGLE}\n"
    )
    code, stdout, screen = on_a_terminal(master, "e", "create", config, CODE, "--paused")
    assert code == 0 and "Created experiment" in stdout, (stdout, screen)
    assert "code" in screen and "bytes" in screen
    piped = master.cli("experiment", "create", config, CODE, "--paused", "--json")
    assert json.loads(ok(piped))["state"] == "PAUSED" and piped.stderr == ""


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--best"], "need one of --experiment ID and --trial ID"),
        (["--best", "--latest", "-e", "1"], "choose one of --best and --latest"),
        (["--best", "-e", "1", "-t", "1"], "need one of --experiment ID and --trial ID"),
        (["-e", "1"], "go with --best or --latest"),
        ([], "give a checkpoint UUID"),
        (["--best", "-e", "999999"], "experiment 999999 does not exist"),
    ],
)
def test_checkpoint_download_bad_choices_say_what_is_wrong(master, args, words):
    assert words in failed(master.cli("checkpoint", "download", *args))


def test_checkpoint_describe(master, finished):
    ckpt = checkpoints_of(master, finished["exp"])[0]
    shown = ok(master.cli("c", "describe", ckpt["uuid"]))
    assert ckpt["uuid"] in shown and "Steps completed" in shown and "state.json" in shown
    assert json.loads(ok(master.cli("checkpoint", "describe", ckpt["uuid"], "--json"))) == ckpt
    assert "does not exist" in failed(master.cli("checkpoint", "describe", "no-such-uuid"))


def test_checkpoint_delete_removes_its_files_and_nothing_else(master, finished):
    trial_id = finished["trials"][0.1]
    listed = checkpoints_of(master, finished["exp"])
    doomed = next(
        c
        for c in listed
        if c["trial_id"] == trial_id and c["uuid"] == master.trial(trial_id)["latest_checkpoint"]
    )
    location = Path(doomed["storage_path"])
    root = location.parent
    before = stored_files(root)
    assert any(path.startswith(location.name + "/") for path in before)

    # Asked, and not confirmed: nothing changes.
    refused = run_cli("--master", master.url, "checkpoint", "delete", doomed["uuid"], stdin="n\n")
    assert "Nothing deleted" in failed(refused)
    assert stored_files(root) == before

    said = ok(master.cli("c", "delete", doomed["uuid"], "--yes"))
    assert f"Deleted checkpoint {doomed['uuid']}" in said
    after = stored_files(root)
    assert not location.exists()
    assert after == {k: v for k, v in before.items() if not k.startswith(location.name + "/")}

    remaining = checkpoints_of(master, finished["exp"])
    assert [c["uuid"] for c in remaining] == [c["uuid"] for c in listed if c is not doomed]
    gone = json.loads(ok(master.cli("checkpoint", "describe", doomed["uuid"], "--json")))
    assert gone["state"] == "DELETED"
    # The trial no longer offers it for a restore: its latest is the one it has left.
    left = [c["uuid"] for c in remaining if c["trial_id"] == trial_id]
    assert master.trial(trial_id)["latest_checkpoint"] in left
    again = failed(master.cli("checkpoint", "delete", doomed["uuid"], "--yes"))
    assert "already been deleted" in again
    [audited] = [
        e
        for e in master.http.get("/audit", params={"limit": 50}).json()
        if e["action"] == "checkpoint.delete" and e["target"] == f"checkpoint:{doomed['uuid']}"
    ]
    assert audited["actor"] == master.username
    assert audited["detail"] == {"experiment": finished["exp"], "trial": trial_id}


def test_another_user_may_not_delete_a_checkpoint_or_kill_a_trial(master, finished):
    """Another editor sees them (403: not theirs); a user without a role in their
    workspace does not (404)."""
    ckpt = checkpoints_of(master, finished["exp"])[0]
    trial_id = finished["trials"][0.9]
    other = master.as_user("tc-other-editor")
    deleted = other.delete(f"/checkpoints/{ckpt['uuid']}")
    assert deleted.status_code == 403, deleted.text
    assert "only its owner" in deleted.json()["error"]["message"]
    killed = other.post(f"/trials/{trial_id}/kill")
    assert killed.status_code == 403, killed.text
    assert "only its owner" in killed.json()["error"]["message"]

    nobody = master.as_user("tc-no-role")
    for binding in master.http.get("/roles").json():
        if binding["user"] == "tc-no-role":  # a new user's editor role in the default workspace
            assert master.http.delete(f"/roles/{binding['id']}").status_code == 204
    assert nobody.delete(f"/checkpoints/{ckpt['uuid']}").status_code == 404
    assert nobody.post(f"/trials/{trial_id}/kill").status_code == 404
    assert master.http.get(f"/checkpoints/{ckpt['uuid']}").json()["state"] == "COMPLETED"
    assert master.trial(trial_id)["state"] == "COMPLETED"


# -- trial kill ----------------------------------------------------------------------------


def test_trial_kill_ends_one_trial_and_the_experiment_goes_on(master, finished, tmp_path):
    gate = tmp_path / "gate"
    exp = master.create(gated(gate), CODE)

    def both_checkpointed():
        trials = master.experiment(exp["id"])["trials"]
        return (
            len(trials) == 2
            and all(t["state"] == "RUNNING" for t in trials)
            and all(master.trial(t["id"])["latest_checkpoint"] for t in trials)
        )

    master.wait_for(both_checkpointed, timeout=60, what="two running trials with a checkpoint")
    killed, other = (t["id"] for t in master.experiment(exp["id"])["trials"])

    # The checkpoint a running trial resumes from is not deleted.
    in_use = master.trial(killed)["latest_checkpoint"]
    refused = failed(master.cli("checkpoint", "delete", in_use, "--yes"))
    assert f"trial {killed} resumes from" in refused
    assert json.loads(ok(master.cli("c", "describe", in_use, "--json")))["state"] == "COMPLETED"

    # A trial that waits for slots (2; 1 is free) ends at once.
    queued_exp = master.create(
        "name: tc-queued\nentrypoint: python3 steps.py\nhyperparameters: {steps: 1}\n"
        "searcher: {name: single, metric: val_loss}\nresources: {slots_per_trial: 2}\n",
        CODE,
    )
    queued = queued_exp["trials"][0]["id"]
    assert master.trial(queued)["state"] == "QUEUED"
    assert f"Trial {queued} killed: CANCELED" in ok(master.cli("trial", "kill", queued))
    assert master.trial(queued)["exit_reason"].startswith("killed by ")
    assert master.wait(queued_exp["id"], timeout=30)["trials"][0]["state"] == "CANCELED"

    said = ok(master.cli("t", "kill", killed))
    assert f"Trial {killed} is being killed" in said
    master.wait_for(
        lambda: master.trial(killed)["state"] == "CANCELED", timeout=30, what="the trial canceled"
    )
    shown = master.trial(killed)
    assert shown["exit_reason"].startswith("killed by ")
    assert master.experiment(exp["id"])["state"] == "ACTIVE"
    assert master.trial(other)["state"] == "RUNNING"
    again = ok(master.cli("trial", "kill", killed))
    assert f"Trial {killed} killed: CANCELED" in again

    Path(f"{gate}.1").touch()  # the other trial goes through its gate and completes
    done = master.wait(exp["id"], timeout=60)
    assert done["state"] == "COMPLETED"
    assert {t["id"]: t["state"] for t in done["trials"]} == {killed: "CANCELED", other: "COMPLETED"}
    assert "already ended (COMPLETED)" in failed(master.cli("trial", "kill", other))
    assert "does not exist" in failed(master.cli("trial", "kill", 999999))


# -- aliases and completion ----------------------------------------------------------------


def test_short_aliases_run_the_same_commands_and_are_not_listed(master, finished):
    assert ok(master.cli("e", "list", "--json")) == ok(master.cli("experiment", "list", "--json"))
    # `t` and `c` run in the other tests of this module.
    listed = ok(master.cli("--help"))
    commands = [
        line.split()[1]
        for line in listed.splitlines()
        if line.startswith("│ ") and len(line.split()) > 1
    ]
    assert "experiment" in commands and "trial" in commands
    assert not {"e", "t", "c", "j", "rp", "u", "w", "p"} & set(commands)


def test_shell_completion_script_and_completions():
    script = ok(run_cli("--show-completion", "bash"))
    assert "_shipyard_completion" in script and "complete " in script

    def complete(words: str) -> list[str]:
        """What bash gets when it asks the command (as the script makes it) for `words`."""
        env = {
            **os.environ,
            "_SHIPYARD_COMPLETE": "complete_bash",
            "COMP_WORDS": words,
            "COMP_CWORD": str(len(words.split()) - 1),
        }
        return ok(run_cli(env=env)).split()

    assert complete("shipyard tri") == ["trial"]
    assert complete("shipyard t lo") == ["logs"]  # an alias completes as its group
    assert "c" not in complete("shipyard c")  # aliases are not offered
