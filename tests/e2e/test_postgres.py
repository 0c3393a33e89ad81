"""The same master and migrations on PostgreSQL (a throwaway initdb cluster)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.master import Master
from tests.fixtures.plain_http import NO_TLS

CODE = Path(__file__).parent / "trial_code"

CONFIG = """
name: on-postgres
entrypoint: python3 steps.py
hyperparameters:
  x: {type: double, minval: -1, maxval: 1}
  steps: 12
  crash_at: 7
searcher: {name: random, metric: val_loss, max_trials: 3, max_concurrent_trials: 2}
max_restarts: 1
"""


@pytest.mark.postgres
def test_experiment_runs_and_survives_a_master_restart_on_postgres(postgres_url, tmp_path):
    master = Master(tmp_path / "home", db_url=postgres_url).start()
    try:
        info = master.http.get("/master").json()
        assert info["database"] == "postgresql"
        exp = master.create(CONFIG, CODE)
        master.kill9()
        master.start()  # migrations are idempotent; state comes back from PostgreSQL
        done = master.wait(exp["id"])
        assert done["state"] == "COMPLETED"
        assert done["num_trials"] == 3
        for trial in done["trials"]:
            assert trial["restarts"] == 1  # crashed once at step 7, resumed from step 5
            steps = [s for s, _ in master.metrics(trial["id"], "training", "loss")]
            assert steps == list(range(1, 13))
    finally:
        master.stop()


@pytest.mark.postgres
def test_users_tokens_and_logins_on_postgres(postgres_url, tmp_path):
    import httpx

    master = Master(tmp_path / "home", db_url=postgres_url).start()
    try:
        url = master.url + "/api/v1"
        assert httpx.get(f"{url}/experiments", verify=NO_TLS).status_code == 401
        made = master.http.post("/users", json={"username": "pg-user", "password": "pg-secret-1"})
        assert made.status_code == 201, made.text
        r = httpx.post(
            f"{url}/auth/login",
            json={"username": "pg-user", "password": "pg-secret-1"},
            verify=NO_TLS,
        )
        token = r.json()["token"]
        user = httpx.Client(
            base_url=url, headers={"Authorization": f"Bearer {token}"}, verify=NO_TLS
        )
        assert user.get("/auth/whoami").json()["username"] == "pg-user"
        wrong = httpx.post(
            f"{url}/auth/login",
            json={"username": "pg-user", "password": "nope-nope"},
            verify=NO_TLS,
        )
        assert wrong.status_code == 401
        assert master.http.post("/users/pg-user/deactivate").status_code == 200
        assert user.get("/auth/whoami").status_code == 401  # at once
        actions = [
            e["action"] for e in master.http.get("/audit", params={"user": "pg-user"}).json()
        ]
        assert actions[:4] == ["user.deactivate", "login.failed", "login", "user.create"]
    finally:
        master.stop()


@pytest.mark.postgres
def test_workspaces_roles_and_quotas_on_postgres(postgres_url, tmp_path):
    """Visibility and quotas are SQL conditions: the same answers on PostgreSQL."""
    master = Master(tmp_path / "home", db_url=postgres_url).start()
    try:
        for ws in ("pg-team-a", "pg-team-b"):
            assert master.http.post("/workspaces", json={"name": ws}).status_code == 201
        hidden = master.create(CONFIG.replace("name: on-postgres", "workspace: pg-team-b"), CODE)
        pia = master.as_user("pg-pia")
        for b in master.http.get("/roles", params={"workspace": "Uncategorized"}).json():
            if b["user"] == "pg-pia":
                assert master.http.delete(f"/roles/{b['id']}").status_code == 204
        r = master.http.post(
            "/roles", json={"role": "viewer", "user": "pg-pia", "workspace": "pg-team-a"}
        )
        assert r.status_code == 201, r.text
        assert pia.get(f"/experiments/{hidden['id']}").status_code == 404
        assert pia.get("/experiments", params={"archived": "all"}).json() == []
        assert [w["name"] for w in pia.get("/workspaces").json()] == ["pg-team-a"]
        quota = master.http.patch("/workspaces/pg-team-a/quotas", json={"max_slots": 1})
        assert quota.status_code == 200 and quota.json()["max_slots"] == 1
        master.wait(hidden["id"])
    finally:
        master.stop()
