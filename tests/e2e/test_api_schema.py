"""Schemathesis against a live master (issue 17): every operation of the master's OpenAPI
schema is called with an admin's API token (a trial's own routes with that trial's task
token): a hand-written request that succeeds, then requests Schemathesis makes from the
schema, valid ones and invalid ones. No answer may be a 500, and every answer must be one the
schema declares: its status code, content type and body. At least 95 % of the operations
must have answered a 2xx, so their success bodies were checked too.

The master is seeded first, so generated path parameters name real objects as well as
made-up ones: a finished search with metrics, checkpoints and logs, an archived experiment,
running trials, users and tokens. Generation is derandomized and bounded (MAX_EXAMPLES a mode
an operation) and nothing is shrunk: a failure is reported as found, with the curl command
that repeats it.

Nothing is left out. What would end the test's own session is steered around instead:
logout gets a token of its own each time, revoke_token never names the admin's token, and
an admin cannot deactivate themselves. Long-polls (wait_s) are cut to LONG_POLL_S."""

from __future__ import annotations

import hashlib
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any

import hypothesis
import pytest
import requests
import schemathesis
from hypothesis import HealthCheck, Phase, given
from hypothesis import strategies as st
from schemathesis import GenerationMode
from schemathesis.checks import (
    content_type_conformance,
    not_a_server_error,
    response_schema_conformance,
    status_code_conformance,
)
from schemathesis.core.failures import FailureGroup

try:  # what Schemathesis's negative cases can break (its own test, not a public API)
    from schemathesis.core.parameters import ParameterLocation as Location
    from schemathesis.specs.openapi._hypothesis import (
        can_negate_headers,
        can_negate_path_parameters,
    )
except ImportError:
    Location = None  # type: ignore[assignment,misc]

from shipyard.server.auth.tokens import TaskTokens
from tests.e2e.master import CODE, Master, make_context

# upload_context takes a gzip'd tar as raw bytes: sent as they are, as an octet stream is.
schemathesis.serializer.alias("application/gzip", "application/octet-stream")

# Generated requests an operation, by mode. An operation with few possible requests (none
# but its path) gets fewer: Hypothesis stops once it has made them all.
MAX_EXAMPLES = {GenerationMode.POSITIVE: 15, GenerationMode.NEGATIVE: 6}
# The answers' checks. Not negative_data_rejection: FastAPI's parsing is laxer than the
# schema it writes (e.g. `since=10.0` is a date-time, as a Unix time), which is no wrong
# answer; the invalid requests must still get no 500 and a declared answer.
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
]
LONG_POLL_S = 0.2  # the most wait_s a request asks for
PASSWORD = "correct horse battery staple"
SEARCH = """
name: schema-search
entrypoint: python3 steps.py
hyperparameters: {x: {type: double, minval: -1, maxval: 1}, steps: 6, ckpt_every: 3}
searcher: {name: random, metric: val_loss, max_trials: 2, max_concurrent_trials: 2}
max_restarts: 0
"""
SHORT = """
name: schema-short
entrypoint: python3 steps.py
hyperparameters: {steps: 3, ckpt_every: 3}
searcher: {name: single, metric: val_loss}
max_restarts: 0
"""
LONG = """
name: schema-long
entrypoint: python3 steps.py
hyperparameters: {steps: 100000, sleep: 2, ckpt_every: 100000}  # alive, and quiet
searcher: {name: single, metric: val_loss}
max_restarts: 0
"""
PREVIEW = """
name: schema-preview
entrypoint: python3 steps.py
hyperparameters: {x: {type: double, minval: 0, maxval: 1}}
searcher: {name: adaptive_asha, metric: val_loss, max_trials: 16, max_length: {batches: 64}}
"""


@pytest.fixture(scope="module")
def master(tmp_path_factory):
    m = Master(tmp_path_factory.mktemp("schema") / "home", slots=4).start()
    yield m
    m.stop()


@dataclass
class Seeded:
    """What the master holds before Schemathesis starts."""

    completed: int  # a finished search of two trials: metrics, checkpoints, logs
    archived: int  # a finished experiment, archived
    live: int  # an experiment whose one trial runs: it takes the trial-side reports
    victim: int  # another running one, to change, pause, activate and kill
    doomed: int  # a finished experiment, deleted (the others are never deleted)
    trials: list[int]  # the finished search's
    live_trial: int
    live_run: int  # the live trial's run: its task token's, and its reports'
    checkpoint: str  # a checkpoint of the finished search
    context: str  # the uploaded trial code
    user: str  # a user with a password
    other: str  # a user without one
    token_id: int  # an API token of `other`, to revoke
    admin_token_id: int  # the token of the requests: never revoked
    workspace: str  # a workspace with a project and a group's role binding
    binding_id: int  # a role binding, to remove
    victim_trial: int = 0  # the victim's trial, killed after its experiment
    spare_checkpoint: str = ""  # the finished search's other trial's latest, deleted
    artifact: dict[str, Any] = field(default_factory=dict)  # the live trial's, recorded
    artifact_id: int = 0
    known: dict[str, list[Any]] = field(default_factory=dict)  # path parameters that exist


@pytest.fixture(scope="module")
def seeded(master: Master):
    search = master.create(SEARCH, CODE)
    archived = master.create(SHORT, CODE)
    doomed = master.create(SHORT, CODE)
    live, victim = master.create(LONG, CODE), master.create(LONG, CODE)
    for exp in (search, archived, doomed):
        assert master.wait(exp["id"], timeout=120)["state"] == "COMPLETED"
    master.http.post(f"/experiments/{archived['id']}/archive").raise_for_status()
    live_trial = live["trials"][0]["id"]
    master.wait_for(lambda: master.trial(live_trial)["state"] == "RUNNING", what="the trial")
    trials = [t["id"] for t in master.experiment(search["id"])["trials"]]
    checkpoint = master.trial(trials[0])["latest_checkpoint"]
    assert checkpoint, master.trial(trials[0])
    for name, password in (("schema-user", PASSWORD), ("schema-other", None)):
        made = master.http.post("/users", json={"username": name, "password": password})
        assert made.status_code == 201, made.text
    token = master.http.post("/tokens", json={"username": "schema-other", "name": "revoke me"})
    assert token.status_code == 201, token.text
    for path, body in [
        ("/workspaces", {"name": "schema-ws"}),
        ("/workspaces/schema-ws/projects", {"name": "schema-project"}),
        ("/groups", {"name": "schema-group"}),
        ("/groups", {"name": "schema-gone"}),
        ("/roles", {"role": "viewer", "group": "schema-group", "workspace": "schema-ws"}),
    ]:
        made = master.http.post(path, json=body)
        assert made.status_code == 201, made.text
    binding = made.json()[0]["id"]
    for name in ("SCHEMA_SECRET", "SCHEMA_GONE"):
        made = master.http.put(f"/workspaces/schema-ws/secrets/{name}", json={"value": "v-1234"})
        assert made.status_code == 200, made.text
    # A model whose version 1 is the checkpoint the requests read, named by an alias; and
    # one with an alias to delete.
    for model in ("schema-model", "schema-gone-model"):
        for method, path, body in (
            ("POST", "/models", {"name": model}),
            ("POST", f"/models/{model}/versions", {"checkpoint_uuid": checkpoint}),
            ("PUT", f"/models/{model}/aliases/production", {"version": 1}),
        ):
            made = master.http.request(method, path, json=body)
            assert made.status_code in (200, 201), made.text
    s = Seeded(
        completed=search["id"],
        archived=archived["id"],
        live=live["id"],
        victim=victim["id"],
        doomed=doomed["id"],
        trials=trials,
        live_trial=live_trial,
        live_run=master.trial(live_trial)["run_id"],
        checkpoint=checkpoint,
        context=master.upload(CODE),
        user="schema-user",
        other="schema-other",
        token_id=token.json()["id"],
        admin_token_id=master.http.get("/auth/whoami").json()["token_id"],
        workspace="schema-ws",
        binding_id=binding,
    )
    s.victim_trial = victim["trials"][0]["id"]
    s.spare_checkpoint = master.trial(trials[1])["latest_checkpoint"]
    assert s.spare_checkpoint and s.spare_checkpoint != s.checkpoint
    s.artifact, s.artifact_id = seed_artifact(master, s.live_trial, s.live_run)
    s.known = {
        "exp_id": [s.completed, s.archived, s.live, s.victim],
        "trial_id": [*s.trials, s.live_trial],
        "other_id": [*s.trials, s.live_trial],
        "uuid": [s.checkpoint],
        "username": [s.user, s.other, master.username],
        "token_id": [s.token_id],
        "workspace": [s.workspace, "Uncategorized"],
        "project": ["schema-project", "Uncategorized"],
        "group": ["schema-group"],
        "binding_id": [s.binding_id],
        "name": ["SCHEMA_SECRET", "SCHEMA_GONE"],
        "model": ["schema-model"],
        "version": [1],
        "alias": ["production"],
        "artifact_id": [s.artifact_id],
    }
    yield s
    for exp_id in (s.live, s.victim):
        master.http.post(f"/experiments/{exp_id}/kill")


def seed_artifact(master: Master, trial_id: int, run_id: int) -> tuple[dict[str, Any], int]:
    """A text artifact of the live trial, written where its experiment's storage (the
    master's default) keeps it and recorded as the trial does: (the record, its id)."""
    data = b"an artifact of the schema test"
    key = f"artifacts/trial-{trial_id}/none/schema.txt"
    path = master.home / "checkpoints" / key
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    record = {
        "run_id": run_id,
        "name": "schema.txt",
        "steps_completed": None,
        "kind": "text",
        "media_type": "text/plain",
        "size": len(data),
        "sha256": hashlib.sha256(data).hexdigest(),
        "storage_path": key,
    }
    made = master.task_http(trial_id, run_id).post(f"/trials/{trial_id}/artifacts", json=record)
    assert made.status_code == 200, made.text
    return record, made.json()["id"]


def succeeding(s: Seeded) -> list[tuple[str, dict[str, Any]]]:
    """A request that answers a 2xx, for each operation (its id, its Case's fields), made
    in this order on the seeded master (the victim is paused, then activated, then killed)."""
    live, run = {"trial_id": s.live_trial}, {"run_id": s.live_run}
    finished, exp = {"trial_id": s.trials[0]}, {"exp_id": s.completed}
    victim, other = {"exp_id": s.victim}, {"username": s.other}
    report = {"group": "validation", "steps_completed": 1, "metrics": {"val_loss": 0.5}}
    checkpoint = {**run, "uuid": "schema-checkpoint", "steps_completed": 1}
    newer = {**run, "uuid": "schema-checkpoint-2", "steps_completed": 2}
    ws, group, user = {"workspace": s.workspace}, {"group": "schema-group"}, {"user": s.user}
    project = {**ws, "project": "schema-project"}
    moved = {"workspace": s.workspace, "project": "schema-project"}
    secret = {**ws, "name": "SCHEMA_SECRET"}
    model = {"model": "schema-model"}
    return [
        ("get_health", {}),
        ("login", {"body": {"username": s.user, "password": PASSWORD}}),
        ("login", {"body": {"username": s.user, "password": PASSWORD, "mode": "cookie"}}),
        ("logout", {}),
        ("whoami", {}),
        ("create_login_ticket", {}),
        ("report_trial_metrics", {"path_parameters": live, "body": {**run, "reports": [report]}}),
        ("get_trial_metrics", {"path_parameters": finished}),
        ("report_checkpoint", {"path_parameters": live, "body": checkpoint}),
        ("report_checkpoint", {"path_parameters": live, "body": newer}),
        (
            "delete_trial_checkpoint",  # no longer the one the live trial resumes from
            {"path_parameters": {**live, "uuid": checkpoint["uuid"]}, "query": run},
        ),
        ("list_trial_checkpoints", {"path_parameters": finished}),
        ("wait_for_searcher", {"path_parameters": live, "body": run}),
        ("report_trial_progress", {"path_parameters": live, "body": {"progress": 0.5}}),
        ("trial_heartbeat", {"path_parameters": live, "body": run}),
        ("report_trial_run_error", {"path_parameters": live, "body": {**run, "message": "m"}}),
        ("get_trial_signals", {"path_parameters": live}),
        ("get_trial_context", {"path_parameters": live}),
        ("get_trial_config", {"path_parameters": live}),
        (
            "report_run_environment",
            {"path_parameters": live, "body": {**run, "rank": 1, "record": {"sections": {}}}},
        ),
        ("get_trial_environment", {"path_parameters": finished}),
        ("diff_trials", {"path_parameters": {**finished, "other_id": s.trials[1]}}),
        ("rerun_trial", {"path_parameters": finished, "query": {"paused": True}}),
        ("report_artifact", {"path_parameters": live, "body": s.artifact}),
        ("list_trial_artifacts", {"path_parameters": live}),
        (
            "get_artifact_content",
            {"path_parameters": {**live, "artifact_id": s.artifact_id}},
        ),
        (
            "send_trial_logs",
            {"path_parameters": live, "body": {**run, "first_line": 0, "lines": ["l"]}},
        ),
        ("get_master", {}),
        ("list_resource_pools", {}),
        ("list_slots", {}),
        ("upload_context", {"body": make_context(CODE), "media_type": "application/gzip"}),
        ("create_experiment", {"body": {"config_yaml": SHORT, "context_id": s.context}}),
        ("list_experiments", {"query": {"archived": "all"}}),
        ("get_experiment", {"path_parameters": exp}),
        ("get_experiment_summary", {"path_parameters": exp}),
        ("set_experiment_resources", {"path_parameters": victim, "body": {"priority": 9}}),
        ("pause_experiment", {"path_parameters": victim}),
        ("activate_experiment", {"path_parameters": victim}),
        ("kill_experiment", {"path_parameters": victim}),
        ("kill_trial", {"path_parameters": {"trial_id": s.victim_trial}}),
        ("rank_checkpoints", {"query": {"experiment_id": s.completed, "order": "best"}}),
        ("delete_checkpoint", {"path_parameters": {"uuid": s.spare_checkpoint}}),
        ("unarchive_experiment", {"path_parameters": {"exp_id": s.archived}}),
        ("archive_experiment", {"path_parameters": {"exp_id": s.archived}}),
        ("change_experiment", {"path_parameters": exp, "body": {"add_labels": ["schema"]}}),
        ("fork_experiment", {"path_parameters": exp, "body": {"paused": True}}),
        ("continue_experiment", {"path_parameters": exp, "body": {"max_trials": 3}}),
        ("delete_experiment", {"path_parameters": {"exp_id": s.doomed}}),
        ("list_experiment_trials", {"path_parameters": exp}),
        ("get_experiment_curves", {"path_parameters": exp, "query": {"name": "val_loss"}}),
        ("list_experiment_metric_names", {"path_parameters": exp}),
        ("list_experiment_checkpoints", {"path_parameters": exp}),
        ("get_experiment_logs", {"path_parameters": exp}),
        ("list_jobs", {}),
        ("list_trials", {}),
        ("get_trial", {"path_parameters": finished}),
        ("get_trial_logs", {"path_parameters": finished}),
        ("get_checkpoint", {"path_parameters": {"uuid": s.checkpoint}}),
        ("download_checkpoint", {"path_parameters": {"uuid": s.checkpoint}}),
        ("get_checkpoint_links", {"path_parameters": {"uuid": s.checkpoint}}),
        ("preview_search", {"body": {"config_yaml": PREVIEW}}),
        ("list_users", {}),
        ("create_user", {"body": {"username": "schema-made"}}),
        ("get_user", {"path_parameters": {"username": s.user}}),
        ("change_password", {"path_parameters": other, "body": {"new_password": PASSWORD}}),
        ("deactivate_user", {"path_parameters": other}),
        ("activate_user", {"path_parameters": other}),
        ("create_token", {"body": {"name": "schema"}}),
        ("list_tokens", {"query": {"all": True}}),
        ("revoke_token", {"path_parameters": {"token_id": s.token_id}}),
        ("list_audit_events", {}),
        ("list_workspaces", {}),
        ("create_workspace", {"body": {"name": "schema-made"}}),
        ("get_workspace", {"path_parameters": ws}),
        ("change_workspace", {"path_parameters": ws, "body": {"archived": False}}),
        ("set_workspace_quotas", {"path_parameters": ws, "body": {"max_slots": 100}}),
        ("list_projects", {"path_parameters": ws}),
        ("create_project", {"path_parameters": ws, "body": {"name": "schema-made"}}),
        ("get_project", {"path_parameters": project}),
        ("change_project", {"path_parameters": project, "body": {"description": "d"}}),
        ("move_experiment", {"path_parameters": {"exp_id": s.archived}, "body": moved}),
        ("list_groups", {}),
        ("create_group", {"body": {"name": "schema-made"}}),
        ("add_group_member", {"path_parameters": {**group, "username": s.user}}),
        ("remove_group_member", {"path_parameters": {**group, "username": s.user}}),
        ("delete_group", {"path_parameters": {"group": "schema-gone"}}),
        ("list_role_bindings", {}),
        ("assign_role", {"body": {"role": "editor", **user, "workspace": s.workspace}}),
        ("remove_role", {"path_parameters": {"binding_id": s.binding_id}}),
        ("list_secrets", {"path_parameters": ws}),
        ("set_secret", {"path_parameters": secret, "body": {"value": "v"}}),
        ("delete_secret", {"path_parameters": {**ws, "name": "SCHEMA_GONE"}}),
        ("rotate_keys", {}),
        ("create_model", {"body": {"name": "schema-made", "tags": ["t"]}}),
        ("list_models", {"query": {"archived": False}}),
        ("get_model", {"path_parameters": model}),
        ("change_model", {"path_parameters": model, "body": {"description": "d"}}),
        (
            "register_model_version",
            {
                "path_parameters": {"model": "schema-made"},
                "body": {"checkpoint_uuid": s.checkpoint},
            },
        ),
        ("delete_model_version", {"path_parameters": {"model": "schema-made", "version": 1}}),
        ("get_model_version", {"path_parameters": {**model, "version": 1}}),
        ("change_model_version", {"path_parameters": {**model, "version": 1}, "body": {}}),
        ("resolve_model_version", {"path_parameters": model, "query": {"ref": "production"}}),
        (
            "set_model_alias",
            {"path_parameters": {**model, "alias": "staging"}, "body": {"version": 1}},
        ),
        ("delete_model_alias", {"path_parameters": {**model, "alias": "staging"}}),
        (
            "delete_model",
            {"path_parameters": {"model": "schema-gone-model"}, "query": {"force": True}},
        ),
    ]


@dataclass
class Outcome:
    operations: list[str]  # every operation of the schema, by label
    statuses: dict[str, Counter] = field(default_factory=lambda: defaultdict(Counter))
    generated: Counter = field(default_factory=Counter)  # Schemathesis's requests
    written: list[tuple[str, int]] = field(default_factory=list)  # hand-written: status
    # By operation: each distinct failure (its checks and status code), as first reported.
    failures: dict[str, dict[tuple, str]] = field(default_factory=lambda: defaultdict(dict))

    def answered_2xx(self) -> list[str]:
        return [op for op in self.operations if any(200 <= c < 300 for c in self.statuses[op])]


class Caller:
    """Sends a case with the credentials its operation takes and checks the answer."""

    def __init__(self, master: Master, s: Seeded, outcome: Outcome) -> None:
        self.master, self.outcome = master, outcome
        self.session = requests.Session()
        self.task_token = "Bearer " + TaskTokens.of_home(master.home).mint(s.live_trial, s.live_run)

    def authorization(self, case: schemathesis.Case) -> str:
        if "trial-side" in (case.operation.tags or []):
            return self.task_token
        if case.operation.definition.raw["operationId"] == "logout":
            # It revokes the token it carries: one of its own each time.
            return "Bearer " + self.master.http.post("/tokens", json={}).json()["token"]
        return self.master.http.headers["Authorization"]

    def __call__(self, case: schemathesis.Case, generated: bool = True) -> None:
        label = case.operation.label
        self.outcome.generated[label] += generated
        headers = {"Authorization": self.authorization(case)}
        try:
            response = case.call(session=self.session, headers=headers, timeout=60)
        except requests.RequestException as exc:
            self.outcome.failures[label].setdefault(("no answer",), repr(exc))
            return
        self.outcome.statuses[label][response.status_code] += 1
        if not generated:
            self.outcome.written.append((label, response.status_code))
        try:
            case.validate_response(response, checks=CHECKS)
        except FailureGroup as exc:
            key = (*sorted(f.code for f in exc.exceptions), response.status_code)
            self.outcome.failures[label].setdefault(key, str(exc))


def cases(operation, mode: GenerationMode, s: Seeded) -> st.SearchStrategy:
    """The operation's cases; the valid ones name the seeded objects too (Hypothesis makes
    each request once, so an operation with nothing but its path gets each object once);
    never one that revokes the admin's token; long-polls cut short."""
    made = operation.as_strategy(generation_mode=mode)
    names = [p.name for p in operation.path_parameters]
    if names and mode == GenerationMode.POSITIVE:
        known = st.fixed_dictionaries({name: st.sampled_from(s.known[name]) for name in names})
        made = st.one_of(made, known.flatmap(lambda p: operation.as_strategy(path_parameters=p)))
    return (
        made.filter(lambda case: not names_token(case, s.admin_token_id))
        .filter(lambda case: not deletes_a_seeded_experiment(case, s))
        .filter(lambda case: not ends_a_seeded_object(case, s))
        .map(short_polls)
    )


def deletes_a_seeded_experiment(case: schemathesis.Case, s: Seeded) -> bool:
    """Whether the case deletes an experiment the other operations' requests name."""
    if case.operation.definition.raw["operationId"] != "delete_experiment":
        return False
    try:
        exp_id = float(str((case.path_parameters or {}).get("exp_id")).strip())
    except ValueError:
        return False
    return exp_id in (s.completed, s.archived, s.live, s.victim)


def ends_a_seeded_object(case: schemathesis.Case, s: Seeded) -> bool:
    """Whether the case kills the live trial (the trial-side requests' own) or deletes the
    checkpoint the other requests read."""
    operation_id = case.operation.definition.raw["operationId"]
    given = case.path_parameters or {}
    if operation_id == "kill_trial":
        try:
            return float(str(given.get("trial_id")).strip()) == s.live_trial
        except ValueError:
            return False
    return operation_id == "delete_checkpoint" and given.get("uuid") == s.checkpoint


def names_token(case: schemathesis.Case, token_id: int) -> bool:
    """Whether the case's token_id reads as that id (the master takes "7.0", " 7" or "+7" as
    7 too)."""
    try:
        return float(str((case.path_parameters or {}).get("token_id")).strip()) == token_id
    except ValueError:
        return False


def short_polls(case: schemathesis.Case) -> schemathesis.Case:
    """Long-polls cut short; and a rerun is made paused, so that the trials it would start
    (one for each of its requests) do not take the machine from the other operations."""
    wait = (case.query or {}).get("wait_s")
    if isinstance(wait, int | float) and not isinstance(wait, bool) and wait > LONG_POLL_S:
        case.query["wait_s"] = LONG_POLL_S
    if case.operation.definition.raw["operationId"] == "rerun_trial":
        case.query = {**(case.query or {}), "paused": True}
    return case


def fuzz(operation, mode: GenerationMode, s: Seeded, call: Caller) -> None:
    @hypothesis.settings(
        max_examples=MAX_EXAMPLES[mode],
        derandomize=True,  # the same requests every run
        database=None,
        deadline=None,
        phases=[Phase.generate],  # failures are recorded, not raised: nothing to shrink
        suppress_health_check=list(HealthCheck),
    )
    @given(case=cases(operation, mode, s))
    def run(case: schemathesis.Case) -> None:
        call(case)

    try:
        run()
    except hypothesis.errors.Unsatisfiable:
        # No request breaks the schema: nothing to break (a body of any bytes, a string path).
        if mode == GenerationMode.POSITIVE:
            raise


def takes_input(operation) -> bool:
    """Whether an operation has parameters or a body, which an invalid request can break."""
    return bool(operation.path_parameters or operation.query or operation.body)


def breakable(operation) -> bool:
    """Whether Schemathesis can make an invalid request of the operation: whether it has a
    part Schemathesis can break, by the test Schemathesis applies before it draws a negative
    case (`_draw_negated_locations`). Without one (string path parameters that any string
    satisfies, a body of any bytes) every negative case it draws is rejected, until
    Hypothesis gives up after hundreds of draws (Unsatisfiable) having sent nothing."""
    if not takes_input(operation):
        return False
    if Location is None:  # Schemathesis moved its test: draw, and see
        return True
    for location in (Location.PATH, Location.HEADER, Location.COOKIE, Location.QUERY):
        if not operation.get_parameter_set(location).schema["properties"]:
            continue
        if location == Location.PATH and not can_negate_path_parameters(operation):
            continue
        if location.is_in_header and not can_negate_headers(operation, location):
            continue
        return True
    return bool(operation.body) and any(item.is_negatable for item in operation.body.items)


@pytest.fixture(scope="module")
def outcome(master: Master, seeded: Seeded) -> Outcome:
    schema = schemathesis.openapi.from_url(master.url + "/openapi.json")
    operations = {}
    for result in schema.get_all_operations():
        operation = result.ok()  # raises if Schemathesis cannot read an operation
        operations[operation.definition.raw["operationId"]] = operation
    found = Outcome(operations=[op.label for op in operations.values()])
    call = Caller(master, seeded, found)
    for operation_id, fields in succeeding(seeded):
        call(operations[operation_id].Case(**fields), generated=False)
    for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
        for operation in operations.values():
            if mode == GenerationMode.POSITIVE or breakable(operation):
                fuzz(operation, mode, seeded, call)
    return found


def test_no_answer_is_a_server_error_or_off_the_schema(outcome: Outcome):
    # Schemathesis made its requests: half its budget an operation at least, on average.
    assert sum(outcome.generated.values()) >= MAX_EXAMPLES[GenerationMode.POSITIVE] / 2 * len(
        outcome.operations
    )
    report = "\n\n".join(
        f"== {op} {key}\n{text}"
        for op, found in outcome.failures.items()
        for key, text in found.items()
    )
    assert not outcome.failures, report


def test_every_hand_written_request_succeeds(outcome: Outcome):
    # two logins, and two checkpoint reports (the first is then deleted by the trial)
    assert len(outcome.written) == len(outcome.operations) + 2
    assert [(op, status) for op, status in outcome.written if not 200 <= status < 300] == []


def test_at_least_95_percent_of_the_operations_are_exercised(outcome: Outcome):
    assert not [op for op in outcome.operations if not outcome.generated[op]]
    answered = outcome.answered_2xx()
    missing = sorted(set(outcome.operations) - set(answered))
    assert len(answered) >= 0.95 * len(outcome.operations), missing


def test_every_operation_declares_the_error_body(master: Master):
    """The schema says what a refusal answers: the master's error body, for any 4xx (its
    invalid requests get a 400 with it, not FastAPI's own 422 body)."""
    schema = requests.get(master.url + "/openapi.json", timeout=30).json()
    error = {"$ref": "#/components/schemas/ErrorResponse"}
    for path, operations in schema["paths"].items():
        for method, operation in operations.items():
            responses = operation["responses"]
            assert responses["4XX"]["content"]["application/json"]["schema"] == error, path
            assert "422" not in responses, (method, path)
    assert "HTTPValidationError" not in schema["components"]["schemas"]
