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
