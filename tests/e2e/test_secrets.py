"""Workspace secrets on a real master over HTTP, with real subprocess trials: set, listed
and deleted by workspace admins and never sent back; sealed at rest; named in a config only
by those who may use them, checked at submit and again at each run's start; injected as
variables and files; masked in every log the master keeps; re-sealed by a key rotation;
audited. And no token, password or secret value in the database or in any log file."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import pty
import select
import sqlite3
import stat
import subprocess
import time
from urllib.parse import quote, quote_plus

import httpx
import pytest

from tests.e2e.master import CODE, SHIPYARD, Master
from tests.fixtures.cli import run_cli

WORKSPACE, OTHER = "ml", "elsewhere"
ECHO = """
name: {name}
workspace: ml
entrypoint: python3 secret_echo.py
hyperparameters: {hparams}
searcher: {{name: single, metric: val_loss}}
max_restarts: {restarts}
secrets:
{secrets}
"""


def echo_config(name: str, secrets: list[str], restarts: int = 0, **hparams) -> str:
    return ECHO.format(
        name=name,
        hparams=json.dumps(hparams),
        restarts=restarts,
        secrets="\n".join(f"  - {s}" for s in secrets),
    )


def printed_forms(value: str) -> list[str]:
    """The value as the trial prints it (trial_code/secret_echo.py), in every form."""
    raw = value.encode()
    return [
        value,
        base64.b64encode(raw).decode(),
        base64.urlsafe_b64encode(b"ab" + raw).decode(),
        quote(value, safe=""),
        quote_plus(value),
        json.dumps(value)[1:-1],
    ]


@pytest.fixture(scope="module")
def master(tmp_path_factory):
    m = Master(tmp_path_factory.mktemp("secrets") / "home", slots=2).start()
    yield m
    m.stop()


@pytest.fixture(scope="module")
def team(master: Master) -> dict[str, httpx.Client]:
    """Two workspaces; in `ml` a workspace admin, an editor and a viewer; in the other an
    editor, who holds no role in `ml`."""
    for name in (WORKSPACE, OTHER):
        assert master.http.post("/workspaces", json={"name": name}).status_code == 201
    members = {
        "ws-admin": ("workspace_admin", WORKSPACE),
        "ed": ("editor", WORKSPACE),
        "vic": ("viewer", WORKSPACE),
        "olga": ("editor", OTHER),
    }
    clients = {}
    for user, (role, workspace) in members.items():
        clients[user] = master.as_user(user)
        bind(master, user, role, workspace)
    return clients


def bind(master: Master, user: str, role: str, workspace: str) -> int:
    r = master.http.post("/roles", json={"role": role, "user": user, "workspace": workspace})
    assert r.status_code == 201, r.text
    [binding] = [b for b in r.json() if b["user"] == user and b["role"] == role]
    return binding["id"]


def set_secret(client: httpx.Client, name: str, value: str, workspace: str = WORKSPACE):
    return client.put(f"/workspaces/{workspace}/secrets/{name}", json={"value": value})


def experiments_stored(master: Master) -> int:
    with sqlite3.connect(master.home / "shipyard.db") as db:
        return db.execute("SELECT count(*) FROM experiments").fetchone()[0]


def database_dump(master: Master) -> str:
    with sqlite3.connect(master.home / "shipyard.db") as db:
        return "\n".join(db.iterdump())


def log_files(master: Master) -> list:
    """Every file under the home's logs directory, and the master's own log."""
    found = [p for p in (master.home / "logs").rglob("*") if p.is_file()]
    return [*found, master.home / "master-test.log"]


def run_echo(master: Master, client: httpx.Client, config: str) -> dict:
    r = client.post("/experiments", json={"config_yaml": config, "context_id": master.upload(CODE)})
    assert r.status_code == 201, r.text
    done = master.wait(r.json()["id"], timeout=120)
    return master.trial(done["trials"][0]["id"])


def audit_events(master: Master, action: str) -> list[dict]:
    events = master.http.get("/audit", params={"limit": 10_000}).json()
    return [e for e in events if e["action"] == action]


def test_workspace_admins_set_list_and_delete_and_no_answer_holds_the_value(master, team):
    admin, value = team["ws-admin"], "sk-live-Set-List-Delete-0042"
    first = set_secret(admin, "API_KEY", value)
    assert first.status_code == 200, first.text
    assert first.json()["version"] == 1 and first.json()["updated_by"] == "ws-admin"
    second = set_secret(admin, "API_KEY", value + "-v2")
    assert second.json()["version"] == 2
    listed = admin.get(f"/workspaces/{WORKSPACE}/secrets")
    assert [s["name"] for s in listed.json()] == ["API_KEY"]
    assert team["vic"].get(f"/workspaces/{WORKSPACE}/secrets").json() == listed.json()  # VIEW
    answers = [first, second, listed, master.http.get(f"/workspaces/{WORKSPACE}")]
    for answer in answers:
        assert value not in answer.text and quote(value) not in answer.text
    # bad input: a 400 naming the field, never a 500
    bad = set_secret(admin, "not-a-name", value)
    assert bad.status_code == 400 and bad.json()["error"]["details"][0]["path"] == "name"
    empty = set_secret(admin, "API_KEY", "")
    assert empty.status_code == 400 and "value" in empty.json()["error"]["details"][0]["path"]
    assert admin.delete(f"/workspaces/{WORKSPACE}/secrets/API_KEY").status_code == 204
    assert admin.get(f"/workspaces/{WORKSPACE}/secrets").json() == []
    gone = admin.delete(f"/workspaces/{WORKSPACE}/secrets/API_KEY")
    assert gone.status_code == 404 and "API_KEY" in gone.json()["error"]["message"]


def test_who_may_write_use_and_see_secrets(master, team):
    assert set_secret(team["ws-admin"], "TEAM_TOKEN", "team-token-value-77aa").status_code == 200
    # editors use secrets but do not write them; viewers do neither
    for user in ("ed", "vic"):
        refused = set_secret(team[user], "TEAM_TOKEN", "overwritten-value-1234")
        assert refused.status_code == 403, refused.text
        assert "workspace_admin" in refused.json()["error"]["message"]
        assert team[user].delete(f"/workspaces/{WORKSPACE}/secrets/TEAM_TOKEN").status_code == 403
    before = experiments_stored(master)
    config = echo_config("viewer-submits", ["TEAM_TOKEN"], env="TEAM_TOKEN")
    r = team["vic"].post("/experiments", json={"config_yaml": config, "context_id": None})
    assert r.status_code == 403, r.text
    assert experiments_stored(master) == before
    # a user of another workspace: that workspace's secrets do not exist for them
    olga = team["olga"]
    assert olga.get(f"/workspaces/{WORKSPACE}/secrets").status_code == 404
    assert set_secret(olga, "TEAM_TOKEN", "olga-was-here-123456").status_code == 404
    assert olga.delete(f"/workspaces/{WORKSPACE}/secrets/TEAM_TOKEN").status_code == 404
    # only a cluster admin rotates the key
    assert team["ws-admin"].post("/admin/rotate-keys").status_code == 403


def test_an_unknown_secret_at_submit_names_its_field_and_stores_nothing(master, team):
    assert set_secret(team["ws-admin"], "KNOWN", "known-secret-value-5150").status_code == 200
    before = experiments_stored(master)
    config = echo_config("unknown-secret", ["KNOWN", "{name: NOT_THERE, file: x.txt}"], env="KNOWN")
    r = team["ed"].post("/experiments", json={"config_yaml": config, "context_id": None})
    assert r.status_code == 422, r.text
    [detail] = r.json()["error"]["details"]
    assert detail["path"] == "secrets[1]" and "NOT_THERE" in detail["message"]
    assert experiments_stored(master) == before
    # a bad name is the config's own error, with its path too
    config = echo_config("bad-name", ["KNOWN", "{name: 'not ok'}"], env="KNOWN")
    r = team["ed"].post("/experiments", json={"config_yaml": config, "context_id": None})
    assert r.status_code == 422 and r.json()["error"]["details"][0]["path"] == "secrets[1].name"


def test_values_are_sealed_at_rest(master, team):
    value = "at-rest-Secret-Value-31415926"
    assert set_secret(team["ws-admin"], "AT_REST", value).status_code == 200
    dump = database_dump(master)
    assert "AT_REST" in dump  # the dump is real
    for form in (value, value.encode().hex(), base64.b64encode(value.encode()).decode()):
        assert form not in dump
    keyring = master.home / "secrets.key"
    assert stat.S_IMODE(os.stat(keyring).st_mode) == 0o600


def test_a_run_gets_its_secrets_masked_in_every_log(master, team):
    value = 'Mask-Me/"now" + 9f8e7d6c5b4a=='
    assert set_secret(team["ws-admin"], "MASKED", value).status_code == 200
    config = echo_config(
        "masked",
        ["MASKED", "{name: MASKED, file: cloud/key.txt}"],
        env="MASKED",
        file="cloud/key.txt",
    )
    trial = run_echo(master, team["ed"], config)
    assert trial["state"] == "COMPLETED", trial
    logs = master.logs(trial["id"])
    text = "\n".join(logs)
    assert f"run 1: the secret has {len(value)} characters" in logs  # it got the value
    assert "the secret file matches the variable: True" in logs
    for marker in ("raw", "b64", "b64url", "url", "json", "split", "file"):
        assert any(line.startswith(f"marker-{marker} ") for line in logs), (marker, logs)
    assert "marker-end" in logs
    assert "marker-split ********" in logs  # printed in two writes, masked as one
    for form in printed_forms(value):
        assert form not in text, form
        for path in log_files(master):
            assert form not in path.read_text(errors="replace"), (form, path)
    assert value not in database_dump(master)
    # The environment the run recorded names the variable and holds neither its value nor
    # the value's hash.
    recorded = master.http.get(f"/trials/{trial['id']}/environment")
    assert recorded.status_code == 200, recorded.text
    (rank,) = recorded.json()["ranks"]
    assert "MASKED" in rank["record"]["sections"]["env"]["redacted"]
    for form in [*printed_forms(value), hashlib.sha256(value.encode()).hexdigest()]:
        assert form not in recorded.text, form
    # the run's secret files are gone with the run
    assert list((master.home / "run-secrets").iterdir()) == []


def test_an_exception_that_quotes_a_secret_is_masked_in_the_exit_reason(master, team):
    value = "quoted-in-an-error-8675309"
    assert set_secret(team["ws-admin"], "QUOTED", value).status_code == 200
    trial = run_echo(master, team["ed"], echo_config("quoted", ["QUOTED"], env="QUOTED", fail=True))
    assert trial["state"] == "ERRORED", trial
    assert (
        "RuntimeError: 401 Unauthorized for url: https://api.example/v1?key=********"
        in (trial["exit_reason"])
    )
    assert value not in database_dump(master)
    for path in log_files(master):
        assert value not in path.read_text(errors="replace"), path


def test_rotation_reseals_every_value_and_runs_still_get_them(master, team):
    value = "rotate-me-please-2718281828"
    assert set_secret(team["ws-admin"], "ROTATED", value).status_code == 200
    keyring = master.home / "secrets.key"
    old = json.loads(keyring.read_text())["current"]
    r = master.http.post("/admin/rotate-keys")
    assert r.status_code == 200, r.text
    done = r.json()
    stored = len(database_dump(master).split('INSERT INTO "secrets"')) - 1
    assert done["reencrypted"] == stored >= 1 and done["key_id"] != old
    assert list(json.loads(keyring.read_text())["keys"]) == [done["key_id"]]
    with sqlite3.connect(master.home / "shipyard.db") as db:
        assert {k for (k,) in db.execute("SELECT key_id FROM secrets")} == {done["key_id"]}
    trial = run_echo(master, team["ed"], echo_config("after-rotation", ["ROTATED"], env="ROTATED"))
    assert trial["state"] == "COMPLETED", trial
    assert f"run 1: the secret has {len(value)} characters" in master.logs(trial["id"])


def start_gated(master: Master, client: httpx.Client, name: str, gate) -> tuple[int, int]:
    """A trial of the secret `name` whose first run printed it and waits at the gate, then
    fails (it has one restart). Returns (experiment id, trial id)."""
    config = echo_config(name.lower(), [name], restarts=1, env=name, gate=str(gate))
    body = {"config_yaml": config, "context_id": master.upload(CODE)}
    r = client.post("/experiments", json=body)
    assert r.status_code == 201, r.text
    trial_id = r.json()["trials"][0]["id"]
    master.wait_for(lambda: "marker-end" in master.logs(trial_id), what="run 1's output")
    return r.json()["id"], trial_id


def restart_refused(master: Master, exp_id: int, trial_id: int, gate) -> str:
    """Let run 1 fail; its restart must not start: the trial's exit reason."""
    gate.touch()
    master.wait(exp_id, timeout=60)
    trial = master.trial(trial_id)
    assert trial["state"] == "ERRORED", trial
    assert "launch failed" in trial["exit_reason"]
    assert "not restarted: it would fail the same way" in trial["exit_reason"]
    uses = [e for e in audit_events(master, "secret.use") if e["detail"]["trial"] == trial_id]
    assert [e["detail"]["run"] for e in uses] == [1]  # run 2 never got the value
    return trial["exit_reason"]


def test_each_run_checks_again_that_its_owner_may_use_the_secrets(master, team, tmp_path):
    assert set_secret(team["ws-admin"], "RECHECK", "recheck-secret-value-161803").status_code == 200
    exp_id, trial_id = start_gated(master, team["ed"], "RECHECK", tmp_path / "gate")
    bindings = master.http.get("/roles").json()
    [editor] = [b for b in bindings if b["user"] == "ed" and b["workspace"] == WORKSPACE]
    assert master.http.delete(f"/roles/{editor['id']}").status_code == 204
    try:
        reason = restart_refused(master, exp_id, trial_id, tmp_path / "gate")
        assert "its owner 'ed' no longer holds a role that may use the secrets" in reason
        assert f"of workspace '{WORKSPACE}'" in reason
    finally:
        bind(master, "ed", "editor", WORKSPACE)


def test_a_deleted_secret_stops_the_next_run(master, team, tmp_path):
    assert set_secret(team["ws-admin"], "SOON_GONE", "soon-gone-value-0000111").status_code == 200
    exp_id, trial_id = start_gated(master, team["ed"], "SOON_GONE", tmp_path / "gate")
    deleted = team["ws-admin"].delete(f"/workspaces/{WORKSPACE}/secrets/SOON_GONE")
    assert deleted.status_code == 204
    reason = restart_refused(master, exp_id, trial_id, tmp_path / "gate")
    assert f"secret 'SOON_GONE' no longer exists in workspace '{WORKSPACE}'" in reason


def test_the_audit_log_records_sets_uses_deletes_and_rotations(master, team):
    sets = audit_events(master, "secret.set")
    assert {"actor": "ws-admin", "target": "workspace:ml"}.items() <= sets[0].items()
    assert {e["detail"]["name"] for e in sets} >= {"API_KEY", "MASKED", "ROTATED"}
    uses = audit_events(master, "secret.use")
    assert uses and all(e["actor"] == "ed" for e in uses)
    assert {"trial", "run", "secrets"} <= set(uses[0]["detail"])
    assert audit_events(master, "secret.delete")[-1]["detail"]["name"] == "API_KEY"
    rotation = audit_events(master, "keys.rotate")[-1]  # the first (newest first)
    assert rotation["actor"] == master.username and rotation["detail"]["reencrypted"] >= 1
    for event in sets + uses:  # names, never values
        assert "value" not in event["detail"]


def test_no_token_password_or_secret_value_in_the_database_or_any_log(master, team):
    value = "Last-Check-Secret-Value-42424242"
    assert set_secret(team["ws-admin"], "LAST", value).status_code == 200
    trial = run_echo(master, team["ed"], echo_config("last", ["LAST"], env="LAST"))
    assert trial["state"] == "COMPLETED"
    _admin, password = (master.home / "admin-password").read_text().split()
    tokens = [master.token, *(c.headers["authorization"].split()[1] for c in team.values())]
    secrets = [value, password, *tokens]
    dump = database_dump(master)
    assert "LAST" in dump and "ws-admin" in dump  # the dump is real
    files = log_files(master)
    assert any(p.name.endswith(".log") for p in files)
    for secret in secrets:
        assert secret not in dump
        for path in files:
            assert secret not in path.read_text(errors="replace"), path


# -- the CLI ------------------------------------------------------------------------------


def cli(master: Master, *args: object, stdin: str = "") -> subprocess.CompletedProcess:
    """The `shipyard` command as the admin (the token this test process keeps)."""
    return run_cli("--master", master.url, *args, stdin=stdin, env={**os.environ, "COLUMNS": "200"})


def test_the_cli_sets_lists_deletes_and_rotates_and_never_shows_a_value(master, team, tmp_path):
    value = "cli-Secret-Value-9876543210"
    made = cli(master, "secret", "set", WORKSPACE, "CLI_SECRET", stdin=value + "\n")
    assert made.returncode == 0, made.stderr
    assert "Set CLI_SECRET in ml (version 1)" in made.stdout
    key = tmp_path / "key.json"
    key.write_text('{"private_key": "cli-file-secret-0123456789"}\n')
    from_file = cli(master, "secret", "set", WORKSPACE, "CLI_FILE", "--from-file", key, "--json")
    assert json.loads(from_file.stdout)["version"] == 1, from_file.stderr
    listed = cli(master, "secret", "list", WORKSPACE)
    assert listed.returncode == 0 and "CLI_SECRET" in listed.stdout and "CLI_FILE" in listed.stdout
    empty = cli(master, "secret", "set", WORKSPACE, "CLI_SECRET", stdin="\n")
    assert empty.returncode == 1 and "is empty; nothing was changed" in empty.stderr
    missing = cli(master, "secret", "set", "no-such-ws", "X_1", stdin="whatever-value")
    assert missing.returncode == 1 and "not found" in missing.stderr
    rotated = cli(master, "admin", "rotate-keys")
    assert rotated.returncode == 0 and "under the new key" in rotated.stdout, rotated.stderr
    deleted = cli(master, "secret", "delete", WORKSPACE, "CLI_FILE")
    assert deleted.returncode == 0 and "Deleted CLI_FILE from ml" in deleted.stdout
    everything = made.stdout + from_file.stdout + listed.stdout + rotated.stdout
    assert value not in everything and "cli-file-secret" not in everything
    # stdin's line end was dropped: the run gets exactly the value
    trial = run_echo(master, team["ed"], echo_config("cli", ["CLI_SECRET"], env="CLI_SECRET"))
    assert f"run 1: the secret has {len(value)} characters" in master.logs(trial["id"])


def test_on_a_terminal_the_cli_asks_for_the_value_without_echo(master):
    fd, sub = pty.openpty()
    proc = subprocess.Popen(
        [str(SHIPYARD), "--master", master.url, "secret", "set", WORKSPACE, "TYPED"],
        stdin=sub,
        stdout=sub,
        stderr=sub,
        env={**os.environ, "TERM": "dumb"},
        close_fds=True,
    )
    os.close(sub)
    seen = b""
    deadline = time.monotonic() + 60
    while b"Value of TYPED (not shown)" not in seen:
        assert time.monotonic() < deadline, seen
        if select.select([fd], [], [], 0.5)[0]:
            seen += os.read(fd, 4096)
    os.write(fd, b"typed-secret-value-4455\r")
    assert proc.wait(timeout=60) == 0
    while select.select([fd], [], [], 0.2)[0]:
        try:
            chunk = os.read(fd, 4096)
        except OSError:
            break
        if not chunk:
            break
        seen += chunk
    os.close(fd)
    assert b"Set TYPED in ml (version 1)" in seen
    assert b"typed-secret-value" not in seen  # never echoed


@pytest.mark.postgres
def test_secrets_on_postgres(postgres_url, tmp_path):
    """Sealed values are bytea columns there: set, given to a run, masked, never in the
    clear in the database."""
    from sqlalchemy import create_engine, text

    pg = Master(tmp_path / "home", db_url=postgres_url).start()
    try:
        assert pg.http.post("/workspaces", json={"name": "pg-secrets"}).status_code == 201
        value = "postgres-Secret-Value-0987654321"
        assert set_secret(pg.http, "PG_SECRET", value, "pg-secrets").status_code == 200
        config = echo_config("on-postgres", ["PG_SECRET"], env="PG_SECRET").replace(
            "workspace: ml", "workspace: pg-secrets"
        )
        trial = run_echo(pg, pg.http, config)
        assert trial["state"] == "COMPLETED", trial
        logs = pg.logs(trial["id"])
        assert f"run 1: the secret has {len(value)} characters" in logs
        assert "marker-raw ********" in logs and value not in "\n".join(logs)
        engine = create_engine(postgres_url)
        with engine.connect() as conn:
            rows = conn.execute(text("SELECT name, ciphertext, nonce FROM secrets")).all()
            lines = conn.execute(text("SELECT text FROM logs")).scalars().all()
        engine.dispose()
        assert "PG_SECRET" in [name for name, _, _ in rows]
        assert all(value.encode() not in bytes(c) + bytes(n) for _, c, n in rows)
        assert lines and all(value not in line for line in lines)
    finally:
        pg.stop()
