"""The master keeps an experiment's config as the normalized JSON a trial reads, and reads
it back as the typed ExperimentConfig (services/experiment_config.py). Every config the docs
and examples show comes back unchanged from its stored form, the model's defaults are the
ones the server applied before, and a master restarted on a database whose configs an
earlier version wrote carries on with them."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from shipyard.common.config import load_config
from shipyard.common.errors import ShipyardError
from shipyard.server.services.experiment_config import from_stored
from tests.doc_blocks import blocks
from tests.e2e.master import Master

ROOT = Path(__file__).parents[2]
CODE = ROOT / "tests" / "e2e" / "trial_code"


def _documented_configs() -> list[tuple[str, str]]:
    found = [(str(p.relative_to(ROOT)), p.read_text()) for p in ROOT.glob("examples/**/*.yaml")]
    for doc in sorted((ROOT / "docs").glob("*.md")):
        found += [
            (f"{doc.name} block {i}", b) for i, b in enumerate(blocks(doc)) if "searcher" in b
        ]
    return found


def _valid(text: str):
    try:
        return load_config(text)
    except ShipyardError:  # a doc block that shows a refused config: never stored
        return None


STORED = [(name, cfg) for name, text in _documented_configs() if (cfg := _valid(text))]


@pytest.mark.parametrize(("name", "cfg"), STORED, ids=[name for name, _ in STORED])
def test_a_stored_config_reads_back_as_the_config_it_came_from(name, cfg):
    stored = json.loads(json.dumps(cfg.to_json_dict()))  # as the JSON column gives it back
    assert from_stored(stored).to_json_dict() == stored


def test_every_searcher_and_hyperparameter_form_is_among_the_stored_configs():
    searchers = {cfg.searcher.name for _, cfg in STORED}
    assert searchers >= {"single", "random", "grid", "adaptive_asha", "async_halving"}
    assert searchers >= {"hyperband", "pbt", "optuna"}
    kinds = {
        hp["type"] for _, cfg in STORED for hp in cfg.to_json_dict()["hyperparameters"].values()
    }
    assert kinds >= {"const", "int", "double", "log", "categorical", "object"}


def test_the_defaults_are_those_the_master_applied():
    """The server once wrote these defaults itself (max_restarts 5, weight 1.0, keep the
    latest and the best checkpoint of each trial): the model has the same."""
    cfg = load_config("entrypoint: python3 train.py\nsearcher: {name: single, metric: loss}\n")
    assert cfg.max_restarts == 5
    assert cfg.resources.weight == 1.0
    assert cfg.resources.slots_per_trial == 1
    assert cfg.resources.max_slots is None
    assert cfg.searcher.smaller_is_better is True
    retention = cfg.retention()
    kept = (retention.save_trial_latest, retention.save_trial_best)
    assert kept + (retention.save_experiment_best,) == (1, 1, 0)
    assert cfg.heartbeat_timeout is cfg.trial_time_limit is cfg.preemption_timeout is None


# Two trials at a gate, one slot: the second is launched by the restarted master.
GATED = """
name: gated
entrypoint: python3 gated.py
hyperparameters:
  gate: {gate}
  x: {{type: categorical, vals: [1, 2]}}
searcher: {{name: grid, metric: val_loss}}
"""

# Fields this version's configs have and an earlier version's did not (migration 0004 era).
NEWER_FIELDS = ("preemption_timeout", "heartbeat_timeout", "trial_time_limit")


def _as_an_earlier_version_stored_it(db: Path, exp_id: int) -> None:
    paths = ", ".join(f"'$.{field}'" for field in NEWER_FIELDS)
    with sqlite3.connect(db) as conn:
        conn.execute(
            f"UPDATE experiments SET config = json_remove(config, {paths}) WHERE id = ?",
            (exp_id,),
        )
        stored = json.loads(
            conn.execute("SELECT config FROM experiments WHERE id = ?", (exp_id,)).fetchone()[0]
        )
    assert not set(NEWER_FIELDS) & set(stored)


def test_a_master_restarted_on_an_earlier_versions_config_carries_on(tmp_path):
    home, gate = tmp_path / "home", tmp_path / "gate"
    master = Master(home, slots=1).start()
    try:
        exp = master.create(GATED.format(gate=gate), CODE)
        master.wait_for(
            lambda: any(t["state"] == "RUNNING" for t in master.experiment(exp["id"])["trials"]),
            what="the first trial to run",
        )
        master.stop()
        _as_an_earlier_version_stored_it(home / "shipyard.db", exp["id"])
        master.start()
        jobs = master.http.get("/jobs").json()
        assert [(j["weight"], j["slots_needed"]) for j in jobs] == [(1.0, 1), (1.0, 1)]
        gate.touch()
        done = master.wait(exp["id"])
    finally:
        master.stop()
    assert done["state"] == "COMPLETED"
    assert [t["state"] for t in done["trials"]] == ["COMPLETED", "COMPLETED"]
    assert (done["searcher"], done["metric"], done["best_validation"]) == ("grid", "val_loss", 0.5)
