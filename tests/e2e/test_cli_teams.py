"""Workspaces, projects, quotas, groups and roles as people use them: the `shipyard`
command (run in the test's process, tests/fixtures/cli.py) against a real master, each
person with a Shipyard home of their own. The assertions are on exit codes and on what they read."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from shipyard.client import credentials
from tests.e2e.master import CODE, Master
from tests.e2e.test_cli_users import Person, failed
from tests.fixtures.plain_http import NO_TLS

FORBIDDEN = "it takes one of these roles"  # an action in a workspace
ONLY_ADMINS = "error: only a cluster admin may do this"  # one over the cluster


@pytest.fixture(scope="module")
def master(tmp_path_factory):
    """One master for the module, 2 slots; each test works in workspaces of its own."""
    m = Master(tmp_path_factory.mktemp("teams") / "home", slots=2).start()
    yield m
    m.stop()


@pytest.fixture(scope="module")
def admin(master, tmp_path_factory) -> Person:
    """The cluster admin (the local user the master made), logged in from a home of theirs."""
    person = Person(master, tmp_path_factory.mktemp("admin-home"))
    master.keep_token_in(person.home)
    return person


@pytest.fixture(scope="module")
def login(admin, master, tmp_path_factory):
    """A new user, logged in from a home of their own (an editor of the default workspace
    only, as every new user is)."""

    def make(username: str) -> Person:
        # Made and logged in through the API: `user create` and `user login` are
        # test_cli_users.py's to test, and each command here costs a process start.
        password = f"{username}-pass-1"
        made = master.http.post("/users", json={"username": username, "password": password})
        assert made.status_code == 201, made.text
        token = httpx.post(
            f"{master.url}/api/v1/auth/login",
            json={"username": username, "password": password},
            verify=NO_TLS,
        ).json()["token"]
        someone = Person(master, tmp_path_factory.mktemp(f"{username}-home"))
        credentials.save(master.url, username, token, someone.home)
        assert someone.kept() == {"username": username, "token": token}
        return someone

    return make


def as_json(person: Person, *args: object) -> Any:
    return json.loads(person.ok(*args, "--json").stdout)


def write_config(
    directory: Path, name: str, workspace: str, project: str, gate: Path | None = None
) -> Path:
    """A one-trial experiment in that workspace and project: two steps of steps.py, or
    gated.py held until the file `gate` exists."""
    if gate is None:
        lines = ["entrypoint: python3 steps.py", "hyperparameters: {steps: 2, ckpt_every: 2}"]
    else:
        lines = [
            "entrypoint: python3 gated.py",
            f"hyperparameters: {{gate: {json.dumps(str(gate))}}}",
        ]
    lines += [
        f"name: {name}",
        f"workspace: {workspace}",
        f"project: {project}",
        "searcher: {name: single, metric: val_loss}",
        "max_restarts: 0",
    ]
    path = directory / f"{name}.yaml"
    path.write_text("\n".join(lines) + "\n")
    return path


def submit(person: Person, config: Path) -> int:
    return as_json(person, "experiment", "create", config, CODE)["id"]


def experiment_ids(person: Person, *args: object) -> set[int]:
    return {exp["id"] for exp in as_json(person, "experiment", "list", "--all", *args)}


# -- workspaces and projects --------------------------------------------------------------


def test_workspace_create_list_describe_rename_archive(admin, login, tmp_path):
    made = admin.ok("workspace", "create", "research")
    assert "Created workspace research" in made.stdout
    message = failed(admin.run("workspace", "create", "research"))
    assert "error: workspace 'research' already exists" in message

    listed = admin.ok("workspace", "list").stdout
    assert "research" in listed and "Uncategorized" in listed
    [research] = [w for w in as_json(admin, "workspace", "list") if w["name"] == "research"]
    assert (research["num_projects"], research["num_experiments"]) == (1, 0)
    assert (research["max_slots"], research["max_trials"]) == (None, None)

    shown = admin.ok("workspace", "describe", "research").stdout
    assert "Slots in use    0 (no limit)" in shown
    assert "Uncategorized" in shown  # its default project

    renamed = admin.ok("workspace", "rename", "research", "lab")
    assert "Renamed workspace research to lab" in renamed.stdout
    assert "not found" in failed(admin.run("workspace", "describe", "research"))

    # Archived: out of the list (unless --archived), and nothing new goes in.
    assert "Workspace lab is archived" in admin.ok("workspace", "archive", "lab").stdout
    assert "lab" not in admin.ok("workspace", "list").stdout
    assert "lab (archived)" in admin.ok("workspace", "list", "--archived").stdout
    message = failed(admin.run("project", "create", "lab", "vision"))
    assert "workspace 'lab' is archived" in message
    message = failed(
        admin.run("experiment", "create", write_config(tmp_path, "a", "lab", "Uncategorized"), CODE)
    )
    assert "workspace 'lab' is archived" in message
    admin.ok("workspace", "unarchive", "lab")
    assert "lab (archived)" not in admin.ok("workspace", "list", "--archived").stdout
    admin.ok("project", "create", "lab", "vision")

    # Making one is a cluster admin's; a user may not, and is told which role it takes.
    carol = login("carol")
    message = failed(carol.run("workspace", "create", "carols"))
    assert message.startswith(f"{ONLY_ADMINS}: create workspaces")
    # One she holds no role in is not even there for her.
    assert "workspace 'lab' not found" in failed(carol.run("workspace", "describe", "lab"))
    assert "lab" not in carol.ok("workspace", "list").stdout


def test_projects_create_list_rename_archive(admin, tmp_path):
    admin.ok("workspace", "create", "nlp")
    made = admin.ok("project", "create", "nlp", "translation", "--description", "en to fr")
    assert "Created project translation in workspace nlp" in made.stdout
    message = failed(admin.run("project", "create", "nlp", "translation"))
    assert "project 'translation' already exists in workspace 'nlp'" in message

    listed = admin.ok("project", "list", "nlp").stdout
    assert "translation" in listed and "en to fr" in listed and "Uncategorized" in listed
    exp_id = submit(admin, write_config(tmp_path, "t1", "nlp", "translation"))
    [project] = [p for p in as_json(admin, "project", "list", "nlp") if p["name"] == "translation"]
    assert project["num_experiments"] == 1
    assert "Experiments  1" in admin.ok("project", "describe", "nlp", "translation").stdout

    renamed = admin.ok("project", "rename", "nlp", "translation", "mt")
    assert "Renamed project translation of workspace nlp to mt" in renamed.stdout
    assert experiment_ids(admin, "--workspace", "nlp", "--project", "mt") == {exp_id}

    admin.ok("project", "archive", "nlp", "mt")
    assert "mt (archived)" in admin.ok("project", "list", "nlp").stdout
    message = failed(
        admin.run("experiment", "create", write_config(tmp_path, "t2", "nlp", "mt"), CODE)
    )
    assert "the experiment's project is archived" in message
    assert "project 'mt' is archived" in message
    admin.ok("project", "unarchive", "nlp", "mt")
    assert "mt (archived)" not in admin.ok("project", "list", "nlp").stdout

    # A project that does not exist: the config is refused, saying how to make it.
    message = failed(
        admin.run("experiment", "create", write_config(tmp_path, "t3", "nlp", "nope"), CODE)
    )
    assert "project 'nope' not found in workspace 'nlp'" in message
    assert "shipyard project create nlp nope" in message
    admin.ok("experiment", "wait", exp_id)


# -- quotas -------------------------------------------------------------------------------


def test_quotas_show_in_describe_hold_trials_and_refuse_going_below_use(admin, tmp_path):
    admin.ok("workspace", "create", "capped")
    set_ = admin.ok("workspace", "set-quota", "capped", "--slots", "2", "--trials", "1")
    assert "slots 0 of 2, running trials 0 of 1" in set_.stdout
    shown = admin.ok("workspace", "describe", "capped").stdout
    assert "Slot quota      2" in shown and "Trial quota     1" in shown

    gate = tmp_path / "gate"
    first = submit(admin, write_config(tmp_path, "q1", "capped", "Uncategorized", gate))
    master = admin.master
    master.wait_for(
        lambda: master.http.get("/workspaces/capped").json()["trials_running"] == 1,
        what="the first trial to run",
    )
    shown = admin.ok("workspace", "describe", "capped").stdout
    assert "Slots in use    1 of 2" in shown and "Running trials  1 of 1" in shown

    # The second trial waits for the quota although the cluster has a free slot.
    second = submit(admin, write_config(tmp_path, "q2", "capped", "Uncategorized", gate))
    master.wait_for(
        lambda: any("at its quota" in job["reason"] for job in master.http.get("/jobs").json()),
        what="the quota to show in the queue",
    )
    assert "'capped' is at its quota: 1 of 1 trials running" in admin.ok("job", "list").stdout
    [summary] = master.experiment(second)["trials"]
    assert summary["state"] == "QUEUED"

    # Below what it holds now: refused, with what is in use; nothing changes.
    message = failed(admin.run("workspace", "set-quota", "capped", "--slots", "0"))
    assert "error: a quota below what the workspace uses now" in message
    assert "max_slots: 1 slots are in use in 'capped'" in message
    assert "Slot quota      2" in admin.ok("workspace", "describe", "capped").stdout

    # Lifted: the second starts; the slot quota stays as it was.
    lifted = admin.ok("workspace", "set-quota", "capped", "--trials", "none").stdout
    assert "running trials 1 (no limit)" in lifted or "running trials 2 (no limit)" in lifted
    master.wait_for(
        lambda: master.experiment(second)["trials"][0]["state"] == "RUNNING",
        what="the second trial to start",
    )
    shown = admin.ok("workspace", "describe", "capped").stdout
    assert "Slots in use    2 of 2" in shown and "Trial quota     none" in shown

    message = failed(admin.run("workspace", "set-quota", "capped", "--slots", "many"), code=2)
    assert "'many' is neither a whole number nor 'none'" in message
    gate.touch()
    admin.ok("experiment", "wait", first)
    admin.ok("experiment", "wait", second)
    assert "Slots in use    0 of 2" in admin.ok("workspace", "describe", "capped").stdout


# -- moving experiments -------------------------------------------------------------------


def test_experiment_move_and_list_filters(admin, login, tmp_path):
    admin.ok("workspace", "create", "alpha")
    admin.ok("workspace", "create", "beta")
    admin.ok("project", "create", "alpha", "p1")
    admin.ok("project", "create", "beta", "p2")
    exp_id = submit(admin, write_config(tmp_path, "mover", "alpha", "p1"))
    admin.ok("experiment", "wait", exp_id)
    assert exp_id in experiment_ids(admin, "--workspace", "alpha", "--project", "p1")
    assert exp_id not in experiment_ids(admin, "--workspace", "beta")

    moved = admin.ok("experiment", "move", exp_id, "beta", "p2")
    assert f"Experiment {exp_id} is in workspace beta, project p2" in moved.stdout
    assert experiment_ids(admin, "--workspace", "beta", "--project", "p2") == {exp_id}
    assert exp_id not in experiment_ids(admin, "--workspace", "alpha")
    assert "beta / p2" in admin.ok("experiment", "describe", exp_id).stdout
    [p2] = [p for p in as_json(admin, "project", "list", "beta") if p["name"] == "p2"]
    assert p2["num_experiments"] == 1
    listed = admin.ok("experiment", "list", "--workspace", "alpha", "--project", "p1").stdout
    assert "No experiments in workspace alpha, project p1." in listed

    # Nowhere to go: an unknown project, an archived one.
    message = failed(admin.run("experiment", "move", exp_id, "beta", "nope"))
    assert "project 'nope' not found in workspace 'beta'" in message
    admin.ok("project", "archive", "alpha", "p1")
    assert "project 'p1' is archived" in failed(
        admin.run("experiment", "move", exp_id, "alpha", "p1")
    )

    # A project is named within a workspace.
    result = admin.run("experiment", "list", "--project", "p2")
    assert result.returncode == 2 and "give --workspace too" in result.stderr

    # Someone who only views beta may not move its experiments.
    dave = login("dave")
    admin.ok("role", "assign", "viewer", "--user", "dave", "--workspace", "beta")
    admin.ok("role", "assign", "editor", "--user", "dave", "--workspace", "alpha")
    message = failed(dave.run("experiment", "move", exp_id, "alpha", "Uncategorized"))
    assert f"experiment {exp_id} is" in message and "only its owner" in message


# -- roles and groups ---------------------------------------------------------------------


def test_a_viewer_sees_a_workspace_but_may_not_submit_to_it(admin, login, tmp_path):
    admin.ok("workspace", "create", "secret-lab")
    exp_id = submit(admin, write_config(tmp_path, "hidden", "secret-lab", "Uncategorized"))
    bob = login("bob")

    # No role in it: its experiments are not there for bob.
    assert exp_id not in experiment_ids(bob)
    message = failed(bob.run("experiment", "describe", exp_id))
    assert f"experiment {exp_id} does not exist" in message

    given = admin.ok("role", "assign", "viewer", "--user", "bob", "--workspace", "secret-lab")
    assert "Gave viewer to user bob in workspace secret-lab" in given.stdout
    shown = admin.ok("role", "list", "--workspace", "secret-lab").stdout
    assert "viewer" in shown and "user bob" in shown and "workspace secret-lab" in shown

    assert exp_id in experiment_ids(bob)
    assert exp_id in experiment_ids(bob, "--workspace", "secret-lab")
    assert "hidden" in bob.ok("experiment", "describe", exp_id).stdout
    assert "secret-lab" in bob.ok("workspace", "list").stdout
    # bob sees his own bindings: the viewer one here, the editor one of the default workspace.
    mine = as_json(bob, "role", "list")
    assert {(b["role"], b["workspace"]) for b in mine if b["user"] == "bob"} == {
        ("viewer", "secret-lab"),
        ("editor", "Uncategorized"),
    }

    # A viewer may not submit, act on experiments, make projects or give roles.
    config = write_config(tmp_path, "bobs", "secret-lab", "Uncategorized")
    message = failed(bob.run("experiment", "create", config, CODE))
    assert "you may not submit experiments" in message and "workspace 'secret-lab'" in message
    assert f"{FORBIDDEN}: editor, workspace_admin, cluster_admin" in message
    assert "only its owner" in failed(bob.run("experiment", "kill", exp_id))
    assert FORBIDDEN in failed(bob.run("project", "create", "secret-lab", "mine"))
    message = failed(
        bob.run("role", "assign", "viewer", "--user", "carol", "--workspace", "secret-lab")
    )
    assert "you may not give and take roles in the workspace" in message
    message = failed(bob.run("workspace", "set-quota", "secret-lab", "--slots", "1"))
    assert message.startswith(f"{ONLY_ADMINS}: set a workspace's quotas")

    # As an editor bob submits; taken back, the workspace is gone for him again.
    admin.ok("role", "assign", "editor", "--user", "bob", "--workspace", "secret-lab")
    bobs = submit(bob, config)
    taken = admin.ok("role", "remove", "viewer", "--user", "bob", "--workspace", "secret-lab")
    assert "Took viewer from user bob in workspace secret-lab" in taken.stdout
    admin.ok("role", "remove", "editor", "--user", "bob", "--workspace", "secret-lab")
    assert experiment_ids(bob) & {exp_id, bobs} == set()
    assert "not found" in failed(bob.run("workspace", "describe", "secret-lab"))
    message = failed(
        admin.run("role", "remove", "viewer", "--user", "bob", "--workspace", "secret-lab")
    )
    assert "no role binding viewer for user 'bob' in workspace 'secret-lab'" in message
    admin.ok("experiment", "wait", exp_id)
    admin.ok("experiment", "wait", bobs)


def test_role_assign_checks_its_arguments(admin):
    result = admin.run("role", "assign", "viewer")
    assert result.returncode == 2 and "give exactly one of --user and --group" in result.stderr
    result = admin.run("role", "assign", "viewer", "--user", "x", "--group", "y")
    assert result.returncode == 2 and "give exactly one of --user and --group" in result.stderr
    result = admin.run("role", "assign", "superuser", "--user", "x")
    assert result.returncode == 2 and "superuser" in result.stderr
    admin.ok("workspace", "create", "scoped")
    me = admin.whoami()["username"]
    message = failed(
        admin.run("role", "assign", "cluster_admin", "--user", me, "--workspace", "scoped")
    )
    assert "cluster_admin is bound at cluster scope only" in message
    assert "user 'ghost' not found" in failed(
        admin.run("role", "assign", "viewer", "--user", "ghost", "--workspace", "scoped")
    )


def test_a_groups_roles_hold_for_its_members(admin, login):
    admin.ok("workspace", "create", "team-ws")
    erin, frank = login("erin"), login("frank")

    assert "Created group team" in admin.ok("group", "create", "team").stdout
    assert "group 'team' already exists" in failed(admin.run("group", "create", "team"))
    added = admin.ok("group", "add", "team", "erin", "frank").stdout
    assert "Added erin to group team" in added and "Added frank to group team" in added
    [team] = [g for g in as_json(admin, "group", "list") if g["name"] == "team"]
    assert team["members"] == ["erin", "frank"]
    assert "erin, frank" in admin.ok("group", "list").stdout

    # Only cluster admins make groups and fill them.
    message = failed(erin.run("group", "create", "mine"))
    assert message.startswith(f"{ONLY_ADMINS}: create and delete groups")
    assert failed(erin.run("group", "add", "team", "erin")).startswith(ONLY_ADMINS)

    # An editor role given to the group: each member may make projects there.
    given = admin.ok("role", "assign", "editor", "--group", "team", "--workspace", "team-ws")
    assert "Gave editor to group team in workspace team-ws" in given.stdout
    assert "group team" in admin.ok("role", "list", "--workspace", "team-ws").stdout
    erin.ok("project", "create", "team-ws", "erins")
    frank.ok("project", "create", "team-ws", "franks")

    # Out of the group, frank loses its role at once.
    removed = admin.ok("group", "remove", "team", "frank").stdout
    assert "Removed frank from group team" in removed
    assert "not found" in failed(frank.run("project", "create", "team-ws", "again"))
    message = failed(admin.run("group", "remove", "team", "frank"))
    assert "'frank' is not in group 'team'" in message

    # Deleted, its members lose its roles; its bindings go with it.
    assert "Deleted group team" in admin.ok("group", "delete", "team").stdout
    assert "not found" in failed(erin.run("project", "create", "team-ws", "again"))
    assert "group team" not in admin.ok("role", "list", "--workspace", "team-ws").stdout
    assert "team" not in admin.ok("group", "list").stdout
    assert "group 'team' not found" in failed(admin.run("group", "delete", "team"))


def test_cluster_scope_roles(admin, login):
    """A cluster-scope role holds in every workspace; the last cluster admin stays one."""
    admin.ok("workspace", "create", "everywhere")
    gina = login("gina")
    assert "everywhere" not in gina.ok("workspace", "list").stdout
    given = admin.ok("role", "assign", "viewer", "--user", "gina")
    assert "Gave viewer to user gina in the cluster" in given.stdout
    assert "everywhere" in gina.ok("workspace", "list").stdout
    assert failed(gina.run("workspace", "create", "ginas")).startswith(ONLY_ADMINS)

    admin.ok("role", "assign", "cluster_admin", "--user", "gina")
    gina.ok("workspace", "create", "ginas")
    assert "user gina" in admin.ok("role", "list").stdout
    admin.ok("role", "remove", "cluster_admin", "--user", "gina")
    assert failed(gina.run("workspace", "create", "ginas-2")).startswith(ONLY_ADMINS)
    admin.ok("role", "remove", "viewer", "--user", "gina")
    assert "everywhere" not in gina.ok("workspace", "list").stdout

    me = admin.whoami()["username"]
    message = failed(admin.run("role", "remove", "cluster_admin", "--user", me))
    assert "would leave the cluster without an active cluster admin" in message
