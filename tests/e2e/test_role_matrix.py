"""Every role × every action of the permission table (shipyard.server.auth.permissions),
on a real master over HTTP: a user holding only that role does the action and gets a 2xx
exactly where the table says yes, and a 403 everywhere else. The docs page is the table."""

from __future__ import annotations

import itertools
import json
import subprocess
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from shipyard.common.permissions import (
    CLUSTER_ACTIONS,
    PERMISSIONS,
    Action,
    Role,
    markdown,
)
from tests.e2e.master import CODE, SHIPYARD, Master
from tests.fixtures.plain_http import NO_TLS

WORKSPACE = "matrix"
PAUSED = """
name: matrix
workspace: matrix
entrypoint: python3 steps.py
hyperparameters: {steps: 100000, sleep: 0.05}
searcher: {name: single, metric: val_loss}
"""
names = (f"n{i}" for i in itertools.count())  # fresh names for what each call makes


@pytest.fixture(scope="module")
def master(tmp_path_factory):
    m = Master(tmp_path_factory.mktemp("matrix") / "home", slots=1).start()
    assert m.http.post("/workspaces", json={"name": WORKSPACE}).status_code == 201
    # No slot to run on: the experiments stay queued and cost nothing.
    quota = m.http.patch(f"/workspaces/{WORKSPACE}/quotas", json={"max_trials": 0})
    assert quota.status_code == 200, quota.text
    yield m
    m.stop()


@pytest.fixture(scope="module")
def context(master):
    return master.upload(CODE)


def submit(client: httpx.Client, context: str, yaml: str = PAUSED) -> httpx.Response:
    return client.post("/experiments", json={"config_yaml": yaml, "context_id": context})


def holding(master: Master, role: Role, context: str) -> tuple[httpx.Client, int]:
    """A user with only `role` (in the workspace, or at cluster scope for cluster_admin),
    and an experiment of theirs, submitted while they were an editor."""
    username = f"{role.value.replace('_', '-')}-{next(names)}"
    client = master.as_user(username)
    for b in master.http.get("/roles").json():
        if b["user"] == username:  # the default workspace's editor role of a new user
            assert master.http.delete(f"/roles/{b['id']}").status_code == 204
    editor = master.http.post(
        "/roles", json={"role": "editor", "user": username, "workspace": WORKSPACE}
    )
    own = submit(client, context)
    assert own.status_code == 201, own.text
    binding = next(b["id"] for b in editor.json() if b["user"] == username)
    assert master.http.delete(f"/roles/{binding}").status_code == 204
    scope = {} if role == Role.CLUSTER_ADMIN else {"workspace": WORKSPACE}
    r = master.http.post("/roles", json={"role": role.value, "user": username, **scope})
    assert r.status_code == 201, r.text
    return client, own.json()["id"]


def calls(master: Master, context: str, own: int, others: int) -> dict[Action, Callable]:
    """One request per action, on objects of the workspace (or the cluster's)."""
    ws = f"/workspaces/{WORKSPACE}"
    secrets_built = "/api/v1/workspaces/{workspace}/secrets/{name}" in master_paths(master)
    with_secret = PAUSED + "secrets: [MATRIX_SECRET]\n"
    return {
        Action.VIEW: lambda c: c.get(f"/experiments/{others}"),
        Action.CREATE_EXPERIMENT: lambda c: submit(c, context),
        Action.EDIT_OWN_EXPERIMENT: lambda c: c.patch(
            f"/experiments/{own}/resources", json={"priority": 7}
        ),
        Action.EDIT_ANY_EXPERIMENT: lambda c: c.patch(
            f"/experiments/{others}/resources", json={"priority": 7}
        ),
        Action.CREATE_PROJECT: lambda c: c.post(f"{ws}/projects", json={"name": next(names)}),
        Action.EDIT_PROJECT: lambda c: c.patch(
            f"{ws}/projects/Uncategorized", json={"description": next(names)}
        ),
        Action.EDIT_WORKSPACE: lambda c: c.patch(ws, json={"archived": False}),
        Action.ASSIGN_WORKSPACE_ROLES: lambda c: c.post(
            "/roles", json={"role": "viewer", "user": "bystander", "workspace": WORKSPACE}
        ),
        Action.USE_SECRETS: (lambda c: submit(c, context, with_secret)) if secrets_built else None,
        Action.WRITE_SECRETS: (
            lambda c: c.put(f"{ws}/secrets/MATRIX_SECRET", json={"value": next(names)})
        )
        if secrets_built
        else None,
        Action.CREATE_WORKSPACE: lambda c: c.post("/workspaces", json={"name": next(names)}),
        Action.SET_QUOTAS: lambda c: c.patch(f"{ws}/quotas", json={"max_trials": 0}),
        Action.MANAGE_USERS: lambda c: c.post("/users", json={"username": next(names)}),
        Action.MANAGE_GROUPS: lambda c: c.post("/groups", json={"name": next(names)}),
        Action.ASSIGN_CLUSTER_ROLES: lambda c: c.post(
            "/roles", json={"role": "viewer", "user": "bystander"}
        ),
        Action.READ_AUDIT_LOG: lambda c: c.get("/audit"),
        Action.ROTATE_KEYS: (lambda c: c.post("/admin/rotate-keys")) if secrets_built else None,
    }


def master_paths(master: Master) -> set[str]:
    return set(httpx.get(master.url + "/openapi.json", timeout=30, verify=NO_TLS).json()["paths"])


def test_every_role_may_do_exactly_what_the_table_says(master, context):
    master.as_user("bystander")
    others = submit(master.http, context)
    assert others.status_code == 201, others.text
    if "/api/v1/workspaces/{workspace}/secrets/{name}" in master_paths(master):
        put = master.http.put(f"/workspaces/{WORKSPACE}/secrets/MATRIX_SECRET", json={"value": "v"})
        assert put.status_code == 200, put.text
    results = {}
    for role in Role:
        client, own = holding(master, role, context)
        table = calls(master, context, own, others.json()["id"])
        assert set(table) == set(Action), "an action with no request here: add one"
        for action, call in table.items():
            if call is None:
                continue
            r = call(client)
            allowed = action in PERMISSIONS[role]
            results[(role.value, action.value)] = r.status_code
            if allowed:
                assert r.status_code < 300, (role, action, r.status_code, r.text)
            else:
                assert r.status_code == 403, (role, action, r.status_code, r.text)
                message = r.json()["error"]["message"]
                if action in (Action.EDIT_OWN_EXPERIMENT, Action.EDIT_ANY_EXPERIMENT):
                    assert "experiment" in message, message
                elif action in CLUSTER_ACTIONS:
                    assert message.startswith("only a cluster admin may do this"), message
                else:
                    assert "it takes one of these roles" in message, message
    assert len(results) >= 4 * 14, len(results)


def test_the_docs_page_is_the_table():
    page = Path(__file__).parents[2] / "docs" / "permissions.md"
    assert page.read_text() == markdown(), (
        "docs/permissions.md is stale: python -m shipyard.server.auth.permissions "
        "> docs/permissions.md"
    )
    for role in Role:
        assert role.value in page.read_text()


def test_the_cli_prints_the_table():
    shown = subprocess.run(
        [str(SHIPYARD), "role", "permissions", "--json"], capture_output=True, text=True
    )
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout) == {
        role.value: sorted(action.value for action in PERMISSIONS[role]) for role in Role
    }
