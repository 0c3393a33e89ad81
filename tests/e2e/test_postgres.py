"""The same master and migrations on PostgreSQL (a throwaway initdb cluster)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.master import Master

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
        assert httpx.get(f"{url}/experiments").status_code == 401
        made = master.http.post("/users", json={"username": "pg-user", "password": "pg-secret-1"})
        assert made.status_code == 201, made.text
        r = httpx.post(f"{url}/auth/login", json={"username": "pg-user", "password": "pg-secret-1"})
        token = r.json()["token"]
        user = httpx.Client(base_url=url, headers={"Authorization": f"Bearer {token}"})
        assert user.get("/auth/whoami").json()["username"] == "pg-user"
        wrong = httpx.post(
            f"{url}/auth/login", json={"username": "pg-user", "password": "nope-nope"}
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
