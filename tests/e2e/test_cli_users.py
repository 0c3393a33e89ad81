"""Users, logins and tokens as a person uses them: the `shipyard` command (in the test's
process, tests/fixtures/cli.py; the installed one where a terminal is needed) against a
real master. Each person at the CLI has a Shipyard home of their own (SHIPYARD_HOME), so
their tokens never mix; the assertions are on exit codes and on what they read."""

from __future__ import annotations

import json
import os
import pty
import select
import stat
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from shipyard.client import Shipyard, credentials
from tests.e2e.master import Master
from tests.fixtures.cli import run_cli

SHIPYARD = Path(sys.executable).parent / "shipyard"  # the installed command
TIMEOUT_S = 60
REVOKED = "the token is unknown, expired or revoked, or its user is inactive"


@pytest.fixture(scope="module")
def master(tmp_path_factory):
    """One master for the module; each test works with users of its own."""
    m = Master(tmp_path_factory.mktemp("users") / "home", slots=1).start()
    yield m
    m.stop()


@dataclass
class Person:
    """Someone at the `shipyard` command, with a Shipyard home of their own."""

    master: Master
    home: Path

    def env(self, extra: dict[str, str] | None = None) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("SHIPYARD_")}
        env.update(SHIPYARD_HOME=str(self.home), COLUMNS="200", **(extra or {}))
        return env

    def run(
        self, *args: object, stdin: str | None = None, token: str | None = None
    ) -> subprocess.CompletedProcess:
        """`shipyard --master URL ARGS...`; `stdin`: what is piped in; `token`: sent as
        SHIPYARD_TOKEN instead of what this home keeps."""
        return run_cli(
            "--master",
            self.master.url,
            *args,
            stdin=stdin,
            env=self.env({"SHIPYARD_TOKEN": token} if token else None),
        )

    def ok(self, *args: object, **kwargs) -> subprocess.CompletedProcess:
        return ok(self.run(*args, **kwargs))

    def kept(self) -> dict | None:
        """What this home keeps for the master: {"username", "token"}, or None."""
        return credentials.entry(self.master.url, self.home)

    def login(self, username: str, password: str) -> str:
        """Log in with the password piped in; returns the token kept."""
        self.ok("user", "login", username, "--password-stdin", stdin=password + "\n")
        kept = self.kept()
        assert kept and kept["username"] == username, kept
        return kept["token"]

    def whoami(self, token: str | None = None) -> dict:
        return json.loads(self.ok("user", "whoami", "--json", token=token).stdout)


def ok(result: subprocess.CompletedProcess) -> subprocess.CompletedProcess:
    assert result.returncode == 0, f"exit {result.returncode}\n{result.stdout}\n{result.stderr}"
    assert "Traceback" not in result.stderr, result.stderr
    return result


def failed(result: subprocess.CompletedProcess, code: int = 1) -> str:
    """A refusal: the exit code, a message on stderr, nothing on stdout, no traceback."""
    assert result.returncode == code, f"exit {result.returncode}\n{result.stdout}\n{result.stderr}"
    assert "Traceback" not in result.stderr, result.stderr
    assert result.stdout == ""
    return result.stderr


@pytest.fixture(scope="module")
def admin(master, tmp_path_factory) -> Person:
    """The cluster admin (the local user the master made), logged in from a home of theirs."""
    person = Person(master, tmp_path_factory.mktemp("admin-home"))
    master.keep_token_in(person.home)
    return person


@pytest.fixture
def person(master, tmp_path):
    """A new person at the CLI, with an empty home of their own."""
    made = iter(range(1, 100))
    return lambda: Person(master, tmp_path / f"home-{next(made)}")


def make_user(admin: Person, username: str, password: str, *flags: str) -> None:
    admin.ok("user", "create", username, "--password-stdin", *flags, stdin=password + "\n")


def test_login_keeps_a_private_token_and_whoami_shows_the_user(admin, person, monkeypatch):
    make_user(admin, "alice", "alice-pass-1")
    alice = person()
    result = alice.ok("user", "login", "alice", "--password-stdin", stdin="alice-pass-1\n")
    assert f"Logged in to {alice.master.url} as alice" in result.stdout
    auth_file = alice.home / "auth.json"
    assert stat.S_IMODE(auth_file.stat().st_mode) == 0o600
    assert alice.kept()["username"] == "alice"

    me = alice.whoami()
    assert (me["username"], me["admin"], me["service"], me["via"]) == (
        "alice",
        False,
        False,
        "token",
    )
    shown = alice.ok("user", "whoami").stdout
    assert "alice" in shown and str(auth_file) in shown

    # The SDK of the same home finds the same token; or takes one it is given.
    monkeypatch.setenv("SHIPYARD_HOME", str(alice.home))
    with Shipyard(alice.master.url) as sy:
        assert sy.whoami().username == "alice"
    monkeypatch.undo()
    with Shipyard(alice.master.url, token=alice.kept()["token"]) as sy:
        assert sy.whoami().username == "alice"


def test_the_first_admin_logs_in_with_the_one_time_password(master, person):
    """A master started without a terminal leaves the password in its home (for `up`)."""
    name, password = (master.home / "admin-password").read_text().splitlines()
    assert name == master.username
    admin = person()
    admin.login(name, password)
    assert admin.whoami()["admin"] is True


def test_a_wrong_password_is_refused_and_nothing_is_kept(admin, person):
    make_user(admin, "bruno", "bruno-pass-1")
    bruno = person()
    error = failed(bruno.run("user", "login", "bruno", "--password-stdin", stdin="nope\n"))
    assert error.startswith("error: wrong username or password")
    assert "hint:" not in error  # not "log in first": this was the login
    assert bruno.kept() is None
    # An unknown user reads the same.
    error = failed(bruno.run("user", "login", "nobody", "--password-stdin", stdin="nope\n"))
    assert error.startswith("error: wrong username or password")
    assert not (bruno.home / "auth.json").exists()


def test_logout_revokes_the_token(admin, person):
    make_user(admin, "carla", "carla-pass-1")
    carla = person()
    token = carla.login("carla", "carla-pass-1")
    result = carla.ok("user", "logout")
    assert f"Logged out of {carla.master.url} (carla)" in result.stdout
    assert carla.kept() is None
    # The token itself no longer works, wherever it is sent from.
    error = failed(carla.run("user", "whoami", token=token))
    assert error.startswith(f"error: {REVOKED}")
    assert "shipyard user login" in error  # what to do about it
    # Without a token kept, a command says to log in; a second logout has nothing to do.
    assert "shipyard user login" in failed(carla.run("user", "whoami"))
    assert "Not logged in" in carla.ok("user", "logout").stdout


def test_a_deactivated_users_token_fails_on_the_next_command(admin, person):
    make_user(admin, "dora", "dora-pass-1")
    dora = person()
    dora.login("dora", "dora-pass-1")
    assert dora.whoami()["username"] == "dora"

    assert "Deactivated dora" in admin.ok("user", "deactivate", "dora").stdout
    assert failed(dora.run("user", "whoami")).startswith(f"error: {REVOKED}")
    error = failed(dora.run("user", "login", "dora", "--password-stdin", stdin="dora-pass-1\n"))
    assert error.startswith("error: wrong username or password")
    listed = {u["username"]: u for u in json.loads(admin.ok("user", "list", "--json").stdout)}
    assert listed["dora"]["active"] is False and listed["dora"]["has_password"] is True
    table = admin.ok("user", "list").stdout
    assert any("dora" in line and " no " in line for line in table.splitlines())

    # Activated again: the old token stays revoked; a new login works.
    admin.ok("user", "activate", "dora")
    assert failed(dora.run("user", "whoami")).startswith(f"error: {REVOKED}")
    dora.login("dora", "dora-pass-1")
    assert dora.whoami()["username"] == "dora"


def test_change_password(admin, person):
    make_user(admin, "emil", "emil-pass-1")
    emil = person()
    emil.login("emil", "emil-pass-1")

    wrong = emil.run("user", "change-password", "--password-stdin", stdin="nope\nemil-pass-2\n")
    error = failed(wrong)
    assert error.startswith("error: the old password is wrong") and "hint:" not in error

    changed = emil.ok(
        "user", "change-password", "--password-stdin", stdin="emil-pass-1\nemil-pass-2\n"
    )
    assert "Changed the password of emil" in changed.stdout
    error = failed(emil.run("user", "login", "emil", "--password-stdin", stdin="emil-pass-1\n"))
    assert error.startswith("error: wrong username or password")
    emil.login("emil", "emil-pass-2")

    # A cluster admin sets anyone's password, without the old one; a user only their own.
    admin.ok("user", "change-password", "emil", "--password-stdin", stdin="emil-pass-3\n")
    emil.login("emil", "emil-pass-3")
    refused = emil.run(
        "user", "change-password", admin.master.username, "--password-stdin", stdin="x-pass-12\n"
    )
    assert failed(refused).startswith(f"error: user {admin.master.username!r} not found")


def test_tokens_create_list_revoke(admin, person):
    make_user(admin, "fred", "fred-pass-1")
    fred = person()
    fred.login("fred", "fred-pass-1")

    made = fred.ok("token", "create", "--name", "ci", "--expires-in-days", "7")
    token = made.stdout.strip()
    assert made.stdout == token + "\n"  # the token alone, for TOKEN=$(shipyard token create)
    assert "not shown again" in made.stderr

    # Anyone holding it is fred, from any home (SHIPYARD_TOKEN).
    elsewhere = person()
    assert elsewhere.whoami(token=token)["username"] == "fred"

    listed = json.loads(fred.ok("token", "list", "--json").stdout)
    [ci] = [t for t in listed if t["name"] == "ci"]
    assert ci["username"] == "fred" and ci["kind"] == "api" and ci["expires_at"]
    assert token.startswith(ci["prefix"]) and "token" not in ci  # never the secret again
    table = fred.ok("token", "list").stdout
    rows = [line.split("│")[1:-1] for line in table.splitlines() if line.startswith("│")]
    assert [str(ci["id"]), "fred", "ci", "api"] in [[c.strip() for c in r[:4]] for r in rows]

    revoked = fred.ok("token", "revoke", ci["id"])
    assert f"Revoked token {ci['id']} (ci) of fred" in revoked.stdout
    assert failed(elsewhere.run("user", "whoami", token=token)).startswith(f"error: {REVOKED}")
    assert ci["id"] not in [t["id"] for t in json.loads(fred.ok("token", "list", "--json").stdout)]
    assert fred.whoami()["username"] == "fred"  # the login's own token still works

    # Someone else's token is not fred's to revoke.
    admins_tokens = json.loads(admin.ok("token", "list", "--json").stdout)
    error = failed(fred.run("token", "revoke", admins_tokens[0]["id"]))
    assert error.startswith(f"error: token {admins_tokens[0]['id']} not found")


def test_an_admin_makes_tokens_for_a_service_account(admin, person):
    made = admin.ok("user", "create", "robot", "--service")
    assert "Created service account robot" in made.stdout
    created = json.loads(
        admin.ok("token", "create", "--user", "robot", "--never-expires", "--json").stdout
    )
    assert created["username"] == "robot" and created["expires_at"] is None
    robot = person()
    me = robot.whoami(token=created["token"])
    assert me["username"] == "robot" and me["service"] is True
    everyone = json.loads(admin.ok("token", "list", "--all", "--json").stdout)
    assert created["id"] in [t["id"] for t in everyone]
    # A service account has no password to log in with.
    error = failed(robot.run("user", "login", "robot", "--password-stdin", stdin="x\n"))
    assert error.startswith("error: wrong username or password")


def test_a_non_admin_cannot_manage_users_or_read_the_audit_log(admin, person):
    make_user(admin, "gus", "gus-pass-1")
    gus = person()
    gus.login("gus", "gus-pass-1")
    only_admins = "error: only a cluster admin may do this"
    refused = gus.run("user", "create", "mallory", "--password-stdin", stdin="mallory-pass\n")
    assert failed(refused).startswith(only_admins)
    assert failed(gus.run("user", "deactivate", "alice")).startswith(only_admins)
    assert failed(gus.run("admin", "audit")).startswith(only_admins)
    assert "mallory" not in admin.ok("user", "list").stdout
    # Not an admin's token for someone else either.
    refused = gus.run("token", "create", "--user", admin.master.username)
    assert failed(refused).startswith("error: user ")


def test_admin_audit_shows_logins_failures_and_tokens_with_their_actor(admin, person):
    make_user(admin, "hana", "hana-pass-1")
    hana = person()
    failed(hana.run("user", "login", "hana", "--password-stdin", stdin="nope\n"))
    hana.login("hana", "hana-pass-1")
    token_id = json.loads(hana.ok("token", "create", "--name", "nb", "--json").stdout)["id"]
    hana.ok("token", "revoke", token_id)

    events = json.loads(admin.ok("admin", "audit", "--user", "hana", "--json").stdout)
    seen = [(e["actor"], e["action"]) for e in reversed(events)]  # oldest first
    hana_did = [action for actor, action in seen if actor == "hana"]
    assert hana_did == ["login.failed", "login", "token.create", "token.revoke"], seen
    assert (admin.master.username, "user.create") in seen
    assert all(e["address"] == "127.0.0.1" for e in events if e["actor"] == "hana")

    table = admin.ok("admin", "audit", "--user", "hana", "--since", "1h").stdout
    for action in ("login.failed", "token.create", "token.revoke"):
        assert any("hana" in line and action in line for line in table.splitlines()), table
    limited = json.loads(admin.ok("admin", "audit", "--limit", "1", "--json").stdout)
    assert len(limited) == 1
    later = admin.ok("admin", "audit", "--user", "hana", "--since", "2999-01-01T00:00")
    assert "No audit events match." in later.stdout

    bad = admin.run("admin", "audit", "--since", "yesterday")
    assert bad.returncode == 2 and "neither a time ago" in bad.stderr


def test_bad_passwords_are_refused_before_anything_is_sent(admin):
    empty = admin.run("user", "create", "ivo", "--password-stdin", stdin="\n")
    assert failed(empty).startswith("error: the password on stdin is empty")
    none = admin.run("user", "create", "ivo", "--password-stdin", stdin="")
    assert failed(none).startswith("error: stdin ended before the password")
    # Asked for on a pipe, a password is refused rather than read in the clear.
    piped = admin.run("user", "create", "ivo", stdin="ivo-pass-1\n")
    assert "--password-stdin" in failed(piped)
    both = admin.run("token", "create", "--expires-in-days", "3", "--never-expires")
    assert both.returncode == 2 and "not both" in both.stderr
    assert "ivo" not in admin.ok("user", "list").stdout


# -- on a terminal ------------------------------------------------------------------------


class Terminal:
    """`shipyard ARGS...` on a pseudo-terminal, answered prompt by prompt."""

    def __init__(self, person: Person, *args: str) -> None:
        self.fd, sub = pty.openpty()
        self.proc = subprocess.Popen(
            [str(SHIPYARD), "--master", person.master.url, *args],
            stdin=sub,
            stdout=sub,
            stderr=sub,
            env=person.env({"TERM": "dumb"}),
            close_fds=True,
        )
        os.close(sub)
        self.seen = b""

    def read_until(self, text: str) -> None:
        deadline = time.monotonic() + TIMEOUT_S
        while text.encode() not in self.seen:
            assert time.monotonic() < deadline, f"no {text!r} in {self.seen!r}"
            if select.select([self.fd], [], [], 0.5)[0]:
                try:
                    self.seen += os.read(self.fd, 4096)
                except OSError:  # the command exited and closed the terminal
                    assert text.encode() in self.seen, f"no {text!r} in {self.seen!r}"

    def type(self, line: str) -> None:
        os.write(self.fd, line.encode() + b"\r")

    def finish(self) -> tuple[int, str]:
        code = self.proc.wait(timeout=TIMEOUT_S)
        while select.select([self.fd], [], [], 0.2)[0]:
            try:
                chunk = os.read(self.fd, 4096)
            except OSError:
                break
            if not chunk:
                break
            self.seen += chunk
        os.close(self.fd)
        return code, self.seen.decode(errors="replace")


def test_login_on_a_terminal_asks_for_the_password_without_echo(admin, person):
    make_user(admin, "jana", "jana-pass-1")
    jana = person()
    term = Terminal(jana, "user", "login", "jana")
    term.read_until(f"Password for jana at {jana.master.url}")
    term.type("jana-pass-1")
    code, screen = term.finish()
    assert code == 0, screen
    assert "jana-pass-1" not in screen  # never echoed
    assert "Logged in" in screen
    assert jana.whoami()["username"] == "jana"


def test_create_on_a_terminal_refuses_a_mismatched_confirmation(admin):
    term = Terminal(admin, "user", "create", "kai")
    term.read_until("Password for kai")
    term.type("kai-pass-1")
    term.read_until("Repeat it")
    term.type("kai-pass-2")
    code, screen = term.finish()
    assert code == 1, screen
    assert "error: the two passwords do not match" in screen
    assert "Traceback" not in screen
    assert "kai" not in admin.ok("user", "list").stdout
