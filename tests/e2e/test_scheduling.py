"""Scheduling through a real master: experiments of equal priority share the slots in
proportion to resources.weight, counted on trials that really run."""

from __future__ import annotations

import json
from pathlib import Path

from tests.e2e.master import Master

CODE = Path(__file__).parent / "trial_code"


def gated_search(name: str, gate: Path, trials: int, weight: float = 1.0) -> str:
    """`trials` runs of gated.py (a grid over a dummy value): each runs until `gate` exists."""
    return (
        f"name: {name}\n"
        "entrypoint: python3 gated.py\n"
        "hyperparameters:\n"
        f"  gate: {json.dumps(str(gate))}\n"
        f"  copy: {{type: categorical, vals: {list(range(trials))}}}\n"
        f"searcher: {{name: grid, metric: val_loss, max_concurrent_trials: {trials}}}\n"
        f"resources: {{weight: {weight}}}\n"
        "max_restarts: 0\n"
    )


def running(master: Master, exp_id: int) -> int:
    return sum(1 for t in master.experiment(exp_id)["trials"] if t["state"] == "RUNNING")


def test_weights_share_the_slots_between_experiments(tmp_path):
    master = Master(tmp_path / "home", slots=4).start()
    try:
        # A first experiment holds every slot, so the next two queue side by side.
        blocker = master.create(gated_search("blocker", tmp_path / "open-blocker", 4), CODE)
        master.wait_for(lambda: running(master, blocker["id"]) == 4, what="the blocker to run")
        light = master.create(gated_search("light", tmp_path / "open", 4, weight=1), CODE)
        heavy = master.create(gated_search("heavy", tmp_path / "open", 4, weight=3), CODE)
        (tmp_path / "open-blocker").touch()
        master.wait_for(
            lambda: running(master, light["id"]) + running(master, heavy["id"]) == 4,
            what="the freed slots to be given out",
        )
        assert (running(master, light["id"]), running(master, heavy["id"])) == (1, 3)
        (tmp_path / "open").touch()
        for exp in (blocker, light, heavy):
            assert master.wait(exp["id"], timeout=120)["state"] == "COMPLETED"
    finally:
        master.stop()


def test_priority_changed_while_queued_decides_who_runs_next(tmp_path):
    master = Master(tmp_path / "home", slots=2).start()
    try:
        blocker = master.create(gated_search("blocker", tmp_path / "open-blocker", 2), CODE)
        master.wait_for(lambda: running(master, blocker["id"]) == 2, what="the blocker to run")
        older = master.create(gated_search("older", tmp_path / "open", 2), CODE)
        newer = master.create(gated_search("newer", tmp_path / "open", 2), CODE)
        changed = master.cli("experiment", "set", "priority", str(newer["id"]), "10")
        assert changed.returncode == 0, changed.stderr
        assert master.experiment(newer["id"])["config"]["resources"]["priority"] == 10
        (tmp_path / "open-blocker").touch()
        master.wait_for(lambda: running(master, newer["id"]) == 2, what="the newer to run")
        assert running(master, older["id"]) == 0  # it waits behind the smaller number
        (tmp_path / "open").touch()
        for exp in (blocker, older, newer):
            assert master.wait(exp["id"], timeout=120)["state"] == "COMPLETED"
    finally:
        master.stop()


def test_bad_scheduling_values_are_refused_with_the_field(master):
    exp = master.create(gated_search("bad", master.home / "never", 1), CODE)
    refused = master.cli("experiment", "set", "priority", str(exp["id"]), "0")
    assert refused.returncode == 1 and "priority" in refused.stderr
    assert "Traceback" not in refused.stderr
    r = master.http.patch(f"/experiments/{exp['id']}/resources", json={"weight": -1})
    assert r.status_code == 400
    assert r.json()["error"]["details"][0]["path"] == "body.weight"
    r = master.http.patch(f"/experiments/{exp['id']}/resources", json={"slots": 3})
    assert r.status_code == 400  # an unknown field
    assert master.experiment(exp["id"])["config"]["resources"]["priority"] == 42  # unchanged
    master.http.post(f"/experiments/{exp['id']}/kill")


def test_job_list_shows_the_queue_in_scheduling_order_with_reasons(tmp_path):
    master = Master(tmp_path / "home", slots=2).start()
    try:
        blocker = master.create(gated_search("blocker", tmp_path / "open-blocker", 2), CODE)
        master.wait_for(lambda: running(master, blocker["id"]) == 2, what="the blocker to run")
        older = master.create(gated_search("older", tmp_path / "open", 2), CODE)
        urgent = master.create(gated_search("urgent", tmp_path / "open", 1), CODE)
        master.cli("experiment", "set", "priority", str(urgent["id"]), "10")
        paused = master.create(gated_search("paused", tmp_path / "open", 1), CODE)
        master.http.post(f"/experiments/{paused['id']}/pause")

        shown = master.cli("job", "list", "--json")
        assert shown.returncode == 0, shown.stderr
        jobs = [(j["experiment_id"], j["reason"]) for j in json.loads(shown.stdout)]
        assert [exp for exp, _ in jobs] == [blocker["id"]] * 2 + [urgent["id"]] + [
            older["id"]
        ] * 2 + [paused["id"]]
        assert all(reason.startswith("running on cpu") for _, reason in jobs[:2])
        assert all(reason == "waits for a free slot (0 free)" for _, reason in jobs[2:5])
        assert jobs[5][1] == "its experiment is paused"
        table = master.cli("job", "list")
        assert table.returncode == 0 and "waits for a free slot" in table.stdout
        (tmp_path / "open-blocker").touch()
        (tmp_path / "open").touch()
        for exp in (blocker, older, urgent):
            assert master.wait(exp["id"], timeout=120)["state"] == "COMPLETED"
    finally:
        master.stop()
