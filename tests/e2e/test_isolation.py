"""Workspaces keep teams apart, on a real master over HTTP: every route that names an
object (from the app's route table, so a new route fails this test until it is covered)
answers 404 to a user of another workspace, as if the object did not exist, and changes
nothing; lists and counts leave other workspaces' objects out."""

from __future__ import annotations

import httpx
import pytest

from tests.e2e.master import CODE, Master
from tests.e2e.test_auth import TRIAL_SIDE, routes
from tests.fixtures.plain_http import NO_TLS

DONE = """
name: team-b-done
workspace: team-b
project: vision
entrypoint: python3 steps.py
hyperparameters: {steps: 3, ckpt_every: 3}
searcher: {name: single, metric: val_loss}
"""
RUNNING = """
name: team-b-running
workspace: team-b
project: vision
entrypoint: python3 steps.py
hyperparameters: {steps: 100000, sleep: 0.05}
searcher: {name: single, metric: val_loss}
max_restarts: 0
"""
# Objects of no workspace: every signed-in user sees users and groups (as in Determined),
# and a token is its owner's alone (tests/e2e/test_auth.py covers them).
CLUSTER_OBJECTS = {"{username}", "{token_id}", "{group}"}
# A body each write takes (one that passes validation, so the answer is about the object).
BODIES = {
    "move_experiment": {"workspace": "team-a", "project": "Uncategorized"},
    "set_experiment_resources": {"priority": 5},
    "change_workspace": {"archived": True},
    "set_workspace_quotas": {"max_slots": 0},
    "create_project": {"name": "sneaky"},
    "change_project": {"name": "renamed"},
    "set_secret": {"value": "overwritten"},
    "register_model_version": {"checkpoint_uuid": "any"},
    "set_model_alias": {"version": 1},
}
QUERIES = {"get_experiment_curves": {"name": "val_loss"}}


@pytest.fixture(scope="module")
def master(tmp_path_factory):
    m = Master(tmp_path_factory.mktemp("isolation") / "home", slots=2).start()
    yield m
    m.stop()


@pytest.fixture(scope="module")
def teams(master):
    """alice: editor of team-a only; bob: editor of team-b, with a finished experiment
    (trial, checkpoint, logs) and a running one there, a project, a secret, a binding."""
    for ws in ("team-a", "team-b"):
        assert master.http.post("/workspaces", json={"name": ws}).status_code == 201
    made = master.http.post("/workspaces/team-b/projects", json={"name": "vision"})
    assert made.status_code == 201, made.text
    alice, bob = master.as_user("alice"), master.as_user("bob")
    for user, ws in (("alice", "team-a"), ("bob", "team-b")):
        r = master.http.post("/roles", json={"role": "editor", "user": user, "workspace": ws})
        assert r.status_code == 201, r.text
    bindings = master.http.get("/roles", params={"workspace": "Uncategorized"}).json()
    for b in bindings:  # out of the shared default workspace, to see only their own
        if b["user"] in ("alice", "bob"):
            assert master.http.delete(f"/roles/{b['id']}").status_code == 204
    secret = master.http.put("/workspaces/team-b/secrets/TOKEN", json={"value": "s3cr3t-v4lue"})
    done = master.create(DONE, CODE, owner="bob")
    running = master.create(RUNNING, CODE, owner="bob")
    assert master.wait(done["id"])["state"] == "COMPLETED"
    trial = master.trial(done["trials"][0]["id"])
    # bob's model in team-b: version 1 is the finished trial's checkpoint, named by an alias
    for method, path, body in (
        ("POST", "/models", {"name": "team-b-model", "workspace": "team-b"}),
        ("POST", "/models/team-b-model/versions", {"checkpoint_uuid": trial["latest_checkpoint"]}),
        ("PUT", "/models/team-b-model/aliases/production", {"version": 1}),
    ):
        made = bob.request(method, path, json=body)
        assert made.status_code in (200, 201), made.text
    live = running["trials"][0]["id"]
    master.wait_for(lambda: master.trial(live)["state"] == "RUNNING", what="bob's trial")
    team_b_binding = next(
        b["id"]
        for b in master.http.get("/roles", params={"workspace": "team-b"}).json()
        if b["user"] == "bob"
    )
    yield {
        "alice": alice,
        "bob": bob,
        "params": {
            "{exp_id}": str(done["id"]),
            "{trial_id}": str(trial["id"]),
            "{other_id}": str(trial["id"]),
            "{uuid}": trial["latest_checkpoint"],
            "{workspace}": "team-b",
            "{project}": "vision",
            "{binding_id}": str(team_b_binding),
            "{name}": "TOKEN",
            "{model}": "team-b-model",
            "{version}": "1",
            "{alias}": "production",
            "{artifact_id}": "1",  # any: the trial is not found first
        },
        "experiments": {done["id"], running["id"]},
        "trials": {trial["id"], live},
        "secrets": secret.status_code == 200,
    }
    master.http.post(f"/experiments/{running['id']}/kill")


def test_every_route_naming_another_workspaces_object_answers_404(master, teams):
    alice: httpx.Client = teams["alice"]
    before = stored(master)
    checked = []
    for method, path in routes(master):
        params = [part for part in path.split("/") if part.startswith("{")]
        if not params or (method, path) in TRIAL_SIDE or set(params) & CLUSTER_OBJECTS:
            continue
        if "{name}" in params and not teams["secrets"]:
            continue  # secrets not built on this master
        missing = [p for p in params if p not in teams["params"]]
        assert not missing, f"{method} {path}: no object of team-b for {missing}; add one"
        url = path.removeprefix("/api/v1")
        for param in params:
            url = url.replace(param, teams["params"][param])
        operation = operation_id(master, method, path)
        r = alice.request(
            method, url, json=BODIES.get(operation, {}), params=QUERIES.get(operation)
        )
        assert r.status_code == 404, (method, path, r.status_code, r.text)
        assert r.json()["error"]["type"] == "NotFound"
        checked.append(operation)
    assert len(checked) >= 25, checked
    # The same as bob sees it: nothing was changed by the refused requests.
    assert stored(master) == before
    bob_ws = teams["bob"].get("/workspaces/team-b").json()
    assert bob_ws["name"] == "team-b" and not bob_ws["archived"]
    assert bob_ws["max_slots"] is None
    projects = [p["name"] for p in teams["bob"].get("/workspaces/team-b/projects").json()]
    assert "vision" in projects and "renamed" not in projects and "sneaky" not in projects
    model = teams["bob"].get("/models/team-b-model").json()
    assert model["num_versions"] == 1 and model["aliases"][0]["version"] == 1


def stored(master: Master) -> list[tuple]:
    """What a refused request could have changed in each experiment."""
    found = master.http.get("/experiments", params={"archived": "all"}).json()
    fields = ("id", "name", "workspace", "project", "state", "archived", "owner", "labels")
    return [tuple(str(e[f]) for f in fields) for e in found]


def operation_id(master: Master, method: str, path: str) -> str:
    schema = httpx.get(master.url + "/openapi.json", timeout=30, verify=NO_TLS).json()
    return schema["paths"][path][method.lower()]["operationId"]


def test_lists_and_counts_leave_other_workspaces_out(master, teams):
    alice, bob = teams["alice"], teams["bob"]
    mine_yaml = DONE.replace("team-b", "team-a").replace("vision", "Uncategorized")
    mine = alice.post(
        "/experiments", json={"config_yaml": mine_yaml, "context_id": master.upload(CODE)}
    )
    assert mine.status_code == 201, mine.text
    mine_id = mine.json()["id"]
    lists = {
        "experiments": alice.get("/experiments", params={"archived": "all"}).json(),
        "trials": alice.get("/trials").json(),
        "jobs": alice.get("/jobs").json(),
    }
    assert {e["id"] for e in lists["experiments"]} == {mine_id}
    assert not {t["id"] for t in lists["trials"]} & teams["trials"]
    assert {t["experiment_id"] for t in lists["trials"]} == {mine_id}
    assert not {j["experiment_id"] for j in lists["jobs"]} & teams["experiments"]
    # bob's running trial is in the admin's queue, and first in bob's own
    assert {j["experiment_id"] for j in bob.get("/jobs").json()} & teams["experiments"]
    assert [j["position"] for j in lists["jobs"]] == list(range(1, len(lists["jobs"]) + 1))
    slots = alice.get("/slots").json()
    assert any(slot["busy"] for slot in slots)  # bob's running trial holds one
    assert not {slot["trial_id"] for slot in slots} & teams["trials"]
    assert not {slot["experiment_id"] for slot in slots} & teams["experiments"]
    workspaces = alice.get("/workspaces").json()
    assert [w["name"] for w in workspaces] == ["team-a"]
    assert workspaces[0]["num_experiments"] == 1
    bindings = alice.get("/roles").json()
    assert {b["workspace"] for b in bindings} == {"team-a"}
    assert alice.get("/experiments", params={"workspace": "team-b"}).status_code == 404
    # a config naming a workspace one cannot see reads as one that does not exist
    r = alice.post("/experiments", json={"config_yaml": DONE, "context_id": master.upload(CODE)})
    assert r.status_code == 422, r.text
    assert r.json()["error"]["details"][0]["path"] == "workspace"
    assert "not found" in r.json()["error"]["details"][0]["message"]
    alice.post(f"/experiments/{mine_id}/kill")


def test_a_viewer_sees_but_may_not_change_and_loses_sight_at_the_next_request(master, teams):
    carol = master.as_user("carol")
    r = master.http.post("/roles", json={"role": "viewer", "user": "carol", "workspace": "team-b"})
    assert r.status_code == 201, r.text
    exp_id = teams["params"]["{exp_id}"]
    assert carol.get(f"/experiments/{exp_id}").status_code == 200
    archived = carol.post(f"/experiments/{exp_id}/archive")
    assert archived.status_code == 403, archived.text
    assert "owner" in archived.json()["error"]["message"]
    submitted = carol.post(
        "/experiments", json={"config_yaml": DONE, "context_id": master.upload(CODE)}
    )
    assert submitted.status_code == 403, submitted.text
    binding = next(b for b in r.json() if b["user"] == "carol")
    assert master.http.delete(f"/roles/{binding['id']}").status_code == 204
    assert carol.get(f"/experiments/{exp_id}").status_code == 404  # the very next request
    # a group's role holds for its members, and leaving the group ends it
    assert master.http.post("/groups", json={"name": "vision-team"}).status_code == 201
    assert master.http.put("/groups/vision-team/members/carol").status_code == 204
    r = master.http.post(
        "/roles", json={"role": "viewer", "group": "vision-team", "workspace": "team-b"}
    )
    assert r.status_code == 201, r.text
    assert carol.get(f"/experiments/{exp_id}").status_code == 200
    assert master.http.delete("/groups/vision-team/members/carol").status_code == 204
    assert carol.get(f"/experiments/{exp_id}").status_code == 404
    audit = master.http.get("/audit").json()
    assert {"role.assign", "role.remove", "group.add_member", "group.remove_member"} <= {
        e["action"] for e in audit
    }
