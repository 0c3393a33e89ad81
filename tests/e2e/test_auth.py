"""Authentication on a real master over HTTP: every route asks who calls, tokens and
sessions stop working when revoked, trials hold only their own task token, and no secret is
stored or logged in the clear."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from tests.e2e.master import CODE, SHIPYARD, Master, free_port
from tests.fixtures import procs
from tests.fixtures.plain_http import NO_TLS
from tests.fixtures.poll import poll

PUBLIC = {
    ("GET", "/api/v1/health"),
    ("POST", "/api/v1/auth/login"),
    ("POST", "/api/v1/auth/logout"),
}
TRIAL_SIDE = {
    ("POST", "/api/v1/trials/{trial_id}/metrics"),
    ("POST", "/api/v1/trials/{trial_id}/checkpoints"),
    ("DELETE", "/api/v1/trials/{trial_id}/checkpoints/{uuid}"),
    ("POST", "/api/v1/trials/{trial_id}/searcher/wait"),
    ("POST", "/api/v1/trials/{trial_id}/progress"),
    ("POST", "/api/v1/trials/{trial_id}/heartbeat"),
    ("POST", "/api/v1/trials/{trial_id}/environment"),
    ("POST", "/api/v1/trials/{trial_id}/run-error"),
    ("GET", "/api/v1/trials/{trial_id}/signals"),
    ("GET", "/api/v1/trials/{trial_id}/context"),
    ("GET", "/api/v1/trials/{trial_id}/config"),
    ("POST", "/api/v1/trials/{trial_id}/logs"),
    ("POST", "/api/v1/trials/{trial_id}/artifacts"),
}
LONG = """
name: long
entrypoint: python3 steps.py
hyperparameters: {steps: 100000, sleep: 0.05}
searcher: {name: single, metric: val_loss}
max_restarts: 0
"""
PROBE = """
name: credentials-probe
entrypoint: python3 credentials_probe.py
searcher: {name: single, metric: val_loss}
"""


@pytest.fixture(scope="module")
def master(tmp_path_factory):
    m = Master(tmp_path_factory.mktemp("auth") / "home", slots=4).start()
    yield m
    m.stop()


@pytest.fixture(scope="module")
def running(master):
    """Two running trials (of two experiments): (experiment id, trial id) each."""
    found = []
    for _ in range(2):
        exp = master.create(LONG, CODE)
        trial_id = exp["trials"][0]["id"]
        master.wait_for(lambda t=trial_id: master.trial(t)["state"] == "RUNNING", what="launch")
        found.append((exp["id"], trial_id))
    yield found
    for exp_id, _ in found:
        master.http.post(f"/experiments/{exp_id}/kill")


def routes(master) -> list[tuple[str, str]]:
    """Every API operation of the running master (its OpenAPI schema is built from the
    app's route table, so a new route is in it)."""
    schema = httpx.get(master.url + "/openapi.json", verify=NO_TLS).json()
    return sorted(
        (method.upper(), path)
        for path, operations in schema["paths"].items()
        for method in operations
    )


def concrete(path: str, master, trial_id: int) -> str:
    return (
        path.replace("{exp_id}", "1")
        .replace("{trial_id}", str(trial_id))
        .replace("{uuid}", "0" * 32)
        .replace("{username}", master.username)
        .replace("{token_id}", "1")
        .replace("{workspace}", "Uncategorized")
        .replace("{project}", "Uncategorized")
        .replace("{group}", "g")
        .replace("{binding_id}", "1")
        .replace("{name}", "NAME")
        .replace("{artifact_id}", "1")
    )


def call(client: httpx.Client, method: str, path: str) -> httpx.Response:
    url = path.removeprefix("/api/v1")
    if method == "GET":
        return client.get(url)
    return client.request(method, url, json={})


def test_every_route_but_health_and_login_needs_credentials(master, running):
    trial_id = running[0][1]
    anonymous = httpx.Client(base_url=master.url + "/api/v1", timeout=30, verify=NO_TLS)
    forged_user = bearer(master, "shy_u_madeup")
    forged_task = bearer(master, f"shy_t_{trial_id}_1_madeup")
    checked = 0
    for method, path in routes(master):
        if (method, path) in PUBLIC:
            continue
        url = concrete(path, master, trial_id)
        forged = forged_task if (method, path) in TRIAL_SIDE else forged_user
        for client in (anonymous, forged):
            r = call(client, method, url)
            assert r.status_code == 401, (method, path, r.status_code, r.text)
            assert r.json()["error"]["type"] == "Unauthorized"
        checked += 1
    assert checked >= 40, checked
    assert anonymous.get("/health").json()["status"] == "ok"
    # the answer says how to get in
    r = anonymous.get("/experiments")
    assert r.headers["www-authenticate"] == "Bearer"
    assert "shipyard user login" in r.json()["error"]["message"]


def test_a_task_token_speaks_only_for_its_own_trial_and_run(master, running):
    (exp_a, trial_a), (_, trial_b) = running
    own = master.task_http(trial_a, run_id=1)
    report = {"run_id": 1, "reports": [{"group": "training", "steps_completed": 1, "metrics": {}}]}
    # its own trial and run: heard
    assert own.post(f"/trials/{trial_a}/heartbeat", json={"run_id": 1}).status_code == 200
    assert own.get(f"/trials/{trial_a}/signals").status_code == 200
    # another trial: refused, and nothing reaches it
    r = own.post(f"/trials/{trial_b}/metrics", json=report)
    assert r.status_code == 403 and f"not trial {trial_b}" in r.json()["error"]["message"]
    assert own.get(f"/trials/{trial_b}/signals").status_code == 403
    # another run of its own trial
    r = own.post(f"/trials/{trial_a}/heartbeat", json={"run_id": 2})
    assert r.status_code == 403 and "run 1" in r.json()["error"]["message"]
    # any user route, reading its own trial included
    for path in (f"/trials/{trial_a}", "/experiments", f"/experiments/{exp_a}", "/auth/whoami"):
        r = own.get(path)
        assert r.status_code == 403, path
        assert "task token" in r.json()["error"]["message"]
    assert own.post(f"/experiments/{exp_a}/kill").status_code == 403
    # a user's token is no trial's token; a made-up task token is nobody's
    r = master.http.post(f"/trials/{trial_a}/heartbeat", json={"run_id": 1})
    assert r.status_code == 403
    forged = httpx.Client(
        base_url=master.url + "/api/v1",
        headers={"Authorization": f"Bearer shy_t_{trial_a}_1_AAAA"},
        verify=NO_TLS,
    )
    assert forged.post(f"/trials/{trial_a}/heartbeat", json={"run_id": 1}).status_code == 401


def test_a_task_token_stops_working_when_its_run_ends(master):
    exp = master.create(LONG, CODE)
    trial_id = exp["trials"][0]["id"]
    master.wait_for(lambda: master.trial(trial_id)["state"] == "RUNNING", what="launch")
    own = master.task_http(trial_id, run_id=1)
    assert own.post(f"/trials/{trial_id}/heartbeat", json={"run_id": 1}).status_code == 200
    master.http.post(f"/experiments/{exp['id']}/kill").raise_for_status()
    master.wait_for(lambda: master.trial(trial_id)["state"] == "CANCELED", what="the kill")
    r = own.post(f"/trials/{trial_id}/heartbeat", json={"run_id": 1})
    assert r.status_code == 409 and "has ended" in r.json()["error"]["message"]


def test_a_trial_holds_its_task_token_and_no_users_token(master):
    exp = master.wait(master.create(PROBE, CODE)["id"], timeout=120)
    assert exp["state"] == "COMPLETED"  # its reports were taken with the task token
    logs = master.logs(exp["trials"][0]["id"])
    assert "task token kind: shy_t_" in logs
    assert "user tokens in the environment: 0" in logs


def test_the_owner_is_who_submits_not_what_the_body_says(master):
    body = {
        "config_yaml": LONG.replace("100000", "1"),
        "context_id": master.upload(CODE),
        "owner": "mallory",
    }
    bob = master.as_user("bob")
    created = bob.post("/experiments", json=body)
    assert created.status_code == 201, created.text
    assert created.json()["owner"] == "bob"
    assert master.experiment(created.json()["id"])["owner"] == "bob"


def login(master, username: str, password: str, **extra) -> httpx.Response:
    return httpx.post(
        f"{master.url}/api/v1/auth/login",
        json={"username": username, "password": password, **extra},
        verify=NO_TLS,
    )


def bearer(master, token: str) -> httpx.Client:
    return httpx.Client(
        base_url=master.url + "/api/v1",
        headers={"Authorization": f"Bearer {token}"},
        verify=NO_TLS,
    )


def test_revocation_and_deactivation_count_from_the_next_request(master):
    made = master.http.post("/users", json={"username": "dora", "password": "dora-secret-1"})
    assert made.status_code == 201, made.text
    r = login(master, "dora", "dora-secret-1")
    assert r.status_code == 200
    dora = bearer(master, r.json()["token"])
    assert dora.get("/auth/whoami").json()["username"] == "dora"
    [session] = [t for t in master.http.get("/tokens?all=true").json() if t["username"] == "dora"]
    assert master.http.post(f"/tokens/{session['id']}/revoke").status_code == 200
    assert dora.get("/auth/whoami").status_code == 401  # the very next request

    dora = bearer(master, login(master, "dora", "dora-secret-1").json()["token"])
    assert dora.get("/experiments").status_code == 200
    assert master.http.post("/users/dora/deactivate").status_code == 200
    assert dora.get("/experiments").status_code == 401
    r = login(master, "dora", "dora-secret-1")
    assert r.status_code == 401 and r.json()["error"]["message"] == "wrong username or password"
    assert master.http.post("/users/dora/activate").status_code == 200
    assert dora.get("/experiments").status_code == 401  # deactivation revoked her tokens
    dora = bearer(master, login(master, "dora", "dora-secret-1").json()["token"])
    # a non-admin may not make users or read the audit log; an admin may
    assert dora.post("/users", json={"username": "eve"}).status_code == 403
    assert dora.get("/audit").status_code == 403
    actions = {e["action"] for e in master.http.get("/audit?user=dora").json()}
    assert {"user.create", "login", "token.revoke", "user.deactivate", "login.failed"} <= actions


def test_a_password_change_keeps_the_old_one_out(master):
    master.http.post("/users", json={"username": "fred", "password": "fred-first-1"})
    fred = bearer(master, login(master, "fred", "fred-first-1").json()["token"])
    elsewhere = bearer(master, login(master, "fred", "fred-first-1").json()["token"])
    kept = bearer(master, master.http.post("/tokens", json={"username": "fred"}).json()["token"])
    r = fred.post(
        "/users/fred/password", json={"new_password": "fred-second-2", "old_password": "nope"}
    )
    assert r.status_code == 401  # the old password is checked
    r = fred.post(
        "/users/fred/password",
        json={"new_password": "fred-second-2", "old_password": "fred-first-1"},
    )
    assert r.status_code == 204, r.text
    # his other logins end; the session he changed it from and his API tokens stay
    assert elsewhere.get("/auth/whoami").status_code == 401
    assert fred.get("/auth/whoami").status_code == 200
    assert kept.get("/auth/whoami").status_code == 200
    assert login(master, "fred", "fred-first-1").status_code == 401
    assert login(master, "fred", "fred-second-2").status_code == 200
    # nobody else's password, and a short one is refused saying why
    assert (
        fred.post(f"/users/{master.username}/password", json={"new_password": "x" * 9}).status_code
        == 404
    )
    r = fred.post(
        "/users/fred/password", json={"new_password": "short", "old_password": "fred-second-2"}
    )
    assert r.status_code == 400 and "at least 8 characters" in r.json()["error"]["message"]


def test_the_web_session_needs_its_csrf_token_for_writes_and_tickets_work_once(master):
    master.http.post("/users", json={"username": "gina", "password": "gina-secret-1"})
    r = login(master, "gina", "gina-secret-1", mode="cookie")
    assert r.status_code == 200 and r.json()["token"] is None  # the secret is in the cookie
    cookie = r.headers.get_list("set-cookie")
    session = next(c for c in cookie if c.startswith("shipyard_session="))
    assert "HttpOnly" in session and "SameSite=lax" in session and "Secure" not in session
    browser = httpx.Client(base_url=master.url, cookies=r.cookies, verify=NO_TLS)
    assert browser.get("/api/v1/auth/whoami").json()["via"] == "session"
    exp = master.create(LONG.replace("100000", "1"), CODE, owner="gina")  # hers to archive
    assert browser.post(f"/api/v1/experiments/{exp['id']}/archive").status_code == 403
    csrf = {"X-CSRF-Token": r.cookies["shipyard_csrf"]}
    master.wait(exp["id"])
    assert browser.post(f"/api/v1/experiments/{exp['id']}/archive", headers=csrf).status_code == 200

    ticket = master.http.post("/auth/tickets").json()["ticket"]
    first = httpx.get(f"{master.url}/login", params={"ticket": ticket}, verify=NO_TLS)
    assert first.status_code == 303 and first.headers["location"] == "/"
    assert "shipyard_session" in first.cookies
    again = httpx.get(f"{master.url}/login", params={"ticket": ticket}, verify=NO_TLS)
    assert again.status_code == 303 and again.headers["location"] == "/login?expired=1"
    assert "shipyard_session" not in again.cookies


def test_no_token_or_password_is_stored_or_logged_in_the_clear(master, running):
    master.http.post("/users", json={"username": "hana", "password": "hana-secret-pw-1"})
    hana_token = login(master, "hana", "hana-secret-pw-1").json()["token"]
    api_token = master.http.post("/tokens", json={"name": "ci"}).json()["token"]
    task_token = master.task_http(running[0][1], 1).headers["authorization"].split()[1]
    login(master, "hana", "a-wrong-password-9")
    secrets = [
        master.token,
        hana_token,
        api_token,
        task_token,
        "hana-secret-pw-1",
        "a-wrong-password-9",
    ]
    with sqlite3.connect(master.home / "shipyard.db") as db:
        dump = "\n".join(db.iterdump())
    assert "hana" in dump  # the dump is real
    logs = [p for p in master.home.rglob("*.log")]
    assert logs
    for secret in secrets:
        assert secret not in dump
        for path in logs:
            assert secret not in path.read_text(errors="replace"), path


def test_a_master_beyond_loopback_needs_authentication(tmp_path):
    home = tmp_path / "home"
    port = free_port()
    argv = [sys.executable, "-m", "shipyard.server", "--home", str(home), "--port", str(port)]
    argv += ["--host", "0.0.0.0"]
    refused = subprocess.run([*argv, "--no-auth"], capture_output=True, text=True, timeout=60)
    assert refused.returncode == 2
    assert "--host 0.0.0.0" in refused.stderr and "authentication" in refused.stderr
    assert not (home / "shipyard.db").exists()  # nothing was started or stored

    with open(tmp_path / "master.log", "wb") as log:
        process = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT)
    try:
        url = f"http://127.0.0.1:{port}/api/v1"
        poll(
            lambda: httpx.get(f"{url}/health", verify=NO_TLS).json()["auth"],
            "the master",
            ignore=(httpx.TransportError,),
        )
        assert httpx.get(f"{url}/experiments", verify=NO_TLS).status_code == 401
        assert not (home / "auth.json").exists()  # no local token off loopback
        # the first admin's one-time password is left for its admin, readable by no one else
        assert oct((home / "admin-password").stat().st_mode & 0o777) == "0o600"
    finally:
        process.terminate()
        process.wait(timeout=30)


def _cpu_ticks(pid: int) -> int:
    """The process's CPU time so far (user + system), in clock ticks."""
    fields = procs.stat_fields(Path(f"/proc/{pid}"))
    return int(fields[11]) + int(fields[12])


def test_unknown_users_and_wrong_passwords_look_alike_and_lock_out(tmp_path):
    """Ten failures lock an account out, whether or not it exists; neither the answer nor
    the work behind it tells the two apart: an unknown name costs the master as much CPU as
    a wrong password does (it checks a decoy hash), summed over 25 tries each, interleaved.
    CPU time, not the answers' latency: that is the machine's load as much as the master's."""
    master = Master(tmp_path / "home").start()
    try:
        names = [f"user{i}" for i in range(25)]
        for name in names:
            master.http.post("/users", json={"username": name, "password": "right-password-1"})
        spent = {"known": 0, "unknown": 0}
        assert master.proc is not None
        # one connection
        with httpx.Client(base_url=master.url + "/api/v1", verify=NO_TLS) as client:
            # not measured: the master makes its decoy hash at the first unknown name
            client.post("/auth/login", json={"username": "warm-up", "password": "x" * 9})
            for i, name in enumerate(names):
                pair = [(name, "known"), (f"nobody{i}", "unknown")]
                for who, kind in pair if i % 2 else pair[::-1]:  # either goes first as often
                    body = {"username": who, "password": "wrong-password-1"}
                    before = _cpu_ticks(master.proc.pid)
                    r = client.post("/auth/login", json=body)
                    spent[kind] += _cpu_ticks(master.proc.pid) - before
                    assert r.status_code == 401
                    assert r.json()["error"]["message"] == "wrong username or password"
        # A check of the password hash is most of a login's work: without the decoy an
        # unknown name would cost a small fraction of a known one.
        assert spent["unknown"] >= 0.75 * spent["known"] > 0, spent
        assert spent["known"] >= 0.75 * spent["unknown"], spent

        master.http.post("/users", json={"username": "ivan", "password": "right-password-1"})
        for who in ("ivan", "nobody-at-all"):
            answers = [login(master, who, "wrong-password-1").status_code for _ in range(10)]
            assert answers == [401] * 10
            r = login(master, who, "right-password-1")
            assert r.status_code == 429, (who, r.text)
            assert "too many failed logins for this account" in r.json()["error"]["message"]
    finally:
        master.stop()


def test_a_user_without_a_password_cannot_log_in_until_an_admin_sets_one(master):
    """As the owners migration 0009 turns into users."""
    assert master.http.post("/users", json={"username": "olga"}).status_code == 201
    assert login(master, "olga", "anything-at-all").status_code == 401
    r = master.http.post("/users/olga/password", json={"new_password": "olga-secret-1"})
    assert r.status_code == 204
    assert login(master, "olga", "olga-secret-1").status_code == 200


def test_an_expired_token_is_refused(master):
    r = master.http.post("/tokens", json={"name": "brief", "expires_in_days": 1 / 86400})
    assert r.status_code == 201 and r.json()["token"].startswith("shy_u_")
    brief = bearer(master, r.json()["token"])
    poll(
        lambda: brief.get("/auth/whoami").status_code,
        "the token to expire",
        until=lambda s: s == 401,
    )
    listed = [t["id"] for t in master.http.get("/tokens").json()]
    assert r.json()["id"] not in listed  # lists show live tokens only
    r = master.http.post("/tokens", json={"expires_in_days": 0})
    assert (
        r.status_code == 400 and r.json()["error"]["details"][0]["path"] == "body.expires_in_days"
    )


def self_signed(directory, *ips: str) -> tuple:
    """A certificate for 127.0.0.1 (and ``ips``) and its key, made with openssl."""
    cert, key = directory / "cert.pem", directory / "key.pem"
    names = ",".join(f"IP:{ip}" for ip in ("127.0.0.1", *ips))
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1"]
        + ["-subj", "/CN=127.0.0.1", "-addext", f"subjectAltName={names}"]
        + ["-keyout", str(key), "-out", str(cert)],
        check=True,
        capture_output=True,
    )
    return cert, key


def test_https_end_to_end_with_a_self_signed_certificate(tmp_path):
    """The CLI, the API and the trials all speak HTTPS to a master serving its own
    certificate; plain HTTP gets no answer."""
    cert, key = self_signed(tmp_path)
    master = Master(tmp_path / "home", tls=(cert, key)).start()
    try:
        assert master.url.startswith("https://")
        exp = master.wait(master.create(PROBE, CODE)["id"], timeout=120)
        assert exp["state"] == "COMPLETED"  # the trial reported over HTTPS
        with pytest.raises(httpx.TransportError):
            httpx.get(master.url.replace("https", "http") + "/api/v1/health", verify=NO_TLS)
        untrusting = subprocess.run(
            [str(SHIPYARD), "--master", master.url, "experiment", "list"],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert untrusting.returncode == 1 and "SHIPYARD_CA_CERT" in untrusting.stderr
        trusting = subprocess.run(
            [str(SHIPYARD), "--master", master.url, "experiment", "list"],
            capture_output=True,
            text=True,
            timeout=60,
            env={**os.environ, "SHIPYARD_CA_CERT": str(cert), "COLUMNS": "200"},
        )
        assert trusting.returncode == 0, trusting.stderr
        assert "credentials-probe" in trusting.stdout
    finally:
        master.stop()
