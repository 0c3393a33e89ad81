"""Adaptive searches through a real master, as a user runs them: ASHA stops the worst trials
at their rungs and fills the freed slots, a stop reaches the trial (or the master ends a
trial that ignores it), and a search goes on unchanged after kill -9 of the master."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from tests.e2e.master import Master

QUADRATIC = Path(__file__).resolve().parents[2] / "examples" / "quadratic"
CODE = Path(__file__).parent / "trial_code"


@pytest.fixture(scope="module")
def master(shared_master):
    return shared_master


@pytest.fixture(scope="module")
def empty_master(tmp_path_factory):
    """A master nothing is ever submitted to, which the previews share."""
    m = Master(tmp_path_factory.mktemp("previews") / "home").start()
    yield m
    m.stop()


def asha_config(**searcher) -> str:
    config = yaml.safe_load((QUADRATIC / "asha.yaml").read_text())
    config["searcher"].update(searcher)
    return yaml.safe_dump(config)


def rung_trial_config(**hparams) -> str:
    """Two trials of rung_trial.py; rungs at 10 and 20 batches. Trial 1 is the better one,
    so the second one is stopped at its first rung."""
    return yaml.safe_dump(
        {
            "name": "stop-reaches-the-trial",
            "entrypoint": "python3 rung_trial.py",
            "hyperparameters": {"length": 400, "sleep": 0.02, **hparams},
            "searcher": {
                "name": "async_halving",
                "metric": "loss",
                "time_metric": "batches",
                "max_time": 20,
                "num_rungs": 2,
                "divisor": 2,
                "max_trials": 2,
                "max_concurrent_trials": 1,
            },
            "max_restarts": 0,
        }
    )


def signature(trials: list[dict]) -> list[tuple]:
    """What a search decided: which trials, with which hparams, how far each went."""
    return sorted(
        (t["request_id"], round(t["hparams"]["lr"], 12), t["state"], t["steps_completed"])
        for t in trials
    )


def test_asha_example_stops_the_worst_at_their_rungs_and_keeps_the_best(master):
    exp = master.create((QUADRATIC / "asha.yaml").read_text(), QUADRATIC)
    done = master.wait(exp["id"], timeout=300)
    trials = done["trials"]
    assert done["state"] == "COMPLETED"
    assert len(trials) == 16 and len({t["request_id"] for t in trials}) == 16
    stopped = [t for t in trials if t["state"] == "STOPPED"]
    completed = [t for t in trials if t["state"] == "COMPLETED"]
    assert stopped and completed and len(stopped) + len(completed) == 16
    # Rungs at 4, 16 and 64 batches; a trial waits at its rung for the decision.
    assert {t["steps_completed"] for t in stopped} <= {4, 16}
    assert {t["steps_completed"] for t in completed} == {64}
    assert all("not in the top" in t["end_reason"] for t in stopped)
    assert all(t["end_reason"] == "completed" for t in completed)
    assert {t["rung"] for t in stopped} <= {0, 1} and {t["rung"] for t in completed} == {2}
    best = min(trials, key=lambda t: t["best_validation"])
    assert best["state"] == "COMPLETED"  # the best learning rate was never stopped
    # Every trial's training resumed where it left off: one metric row per step.
    for t in completed:
        steps = [s for s, _ in master.metrics(t["id"], "training", "loss")]
        assert steps == list(range(1, 65))


def test_a_stop_reaches_the_trial_which_checkpoints_and_exits(master):
    exp = master.create(rung_trial_config(), CODE)
    done = master.wait(exp["id"], timeout=120)
    first, second = sorted(done["trials"], key=lambda t: t["id"])
    assert first["state"] == "COMPLETED" and first["steps_completed"] == 400
    assert second["state"] == "STOPPED"
    assert second["end_reason"].startswith("searcher stop: not in the top")
    assert 10 <= second["steps_completed"] < 400
    assert second["latest_checkpoint"] is not None  # its final checkpoint
    assert any(
        line.startswith("stopped by the searcher at step") for line in master.logs(second["id"])
    )


def test_a_trial_that_ignores_the_stop_is_terminated_after_the_grace_period(tmp_path, monkeypatch):
    monkeypatch.setenv("SHIPYARD_STOP_GRACE_S", "1")
    master = Master(tmp_path / "home").start()
    try:
        exp = master.create(rung_trial_config(ignore_stop=True), CODE)
        done = master.wait(exp["id"], timeout=120)
    finally:
        master.stop()
    first, second = sorted(done["trials"], key=lambda t: t["id"])
    assert first["state"] == "COMPLETED" and first["steps_completed"] == 400
    assert second["state"] == "STOPPED"
    assert "killed by signal" in second["end_reason"]  # terminated, not left to run on
    assert second["steps_completed"] < 400


def test_a_trial_without_the_time_metric_is_stopped_with_the_reason(master):
    exp = master.create(rung_trial_config(no_time_metric=True), CODE)
    done = master.wait(exp["id"], timeout=120)
    assert {t["state"] for t in done["trials"]} == {"STOPPED"}
    for trial in done["trials"]:
        assert "'batches'" in trial["end_reason"] and "time_metric" in trial["end_reason"]
        assert trial["steps_completed"] < 400  # not left running to the end


def test_master_killed_twice_mid_asha_search_ends_with_the_same_trials(tmp_path):
    # One trial at a time, so the uninterrupted run's order of events is the only one.
    config = asha_config(max_trials=8, max_concurrent_trials=1)
    calm = Master(tmp_path / "calm").start()
    try:
        expected = calm.wait(calm.create(config, QUADRATIC)["id"], timeout=300)
    finally:
        calm.stop()
    assert expected["state"] == "COMPLETED" and len(expected["trials"]) == 8

    master = Master(tmp_path / "chaos").start()
    try:
        exp_id = master.create(config, QUADRATIC)["id"]
        for kill in range(2):
            wanted = 2 + 3 * kill  # trials the search has made before this kill
            master.wait_for(
                lambda n=wanted: len(master.experiment(exp_id)["trials"]) >= n,
                timeout=120,
                what=f"{wanted} trials",
            )
            master.kill9()
            master.start()
        done = master.wait(exp_id, timeout=300)
    finally:
        master.stop()
    assert done["state"] == "COMPLETED"
    assert len({t["request_id"] for t in done["trials"]}) == len(done["trials"]) == 8
    assert signature(done["trials"]) == signature(expected["trials"])


PBT = """\
name: quadratic-pbt
entrypoint: python3 train.py
hyperparameters:
  lr: {type: log, base: 10, minval: -3, maxval: -0.5}
  target: 3.0
searcher:
  name: pbt
  metric: validation_loss
  time_metric: batches
  population_size: 4
  num_rounds: 3
  length_per_round: 10
  replace_function: {truncate_fraction: 0.25}
  explore_function: {resample_probability: 0.2, perturb_factor: 0.2}
reproducibility: {experiment_seed: 5}
max_restarts: 0
"""


def test_pbt_replaces_the_worst_from_the_best_checkpoints(master):
    # 4 members on 2 slots: members that finish a round wait without their slot.
    done = master.wait(master.create(PBT, QUADRATIC)["id"], timeout=300)
    assert done["state"] == "COMPLETED"
    trials = {t["id"]: t for t in done["trials"]}
    children = [t for t in trials.values() if t["parent_trial_id"] is not None]
    assert len(trials) == 4 + 2 and len(children) == 2  # one replaced per round boundary
    replaced = [t for t in trials.values() if t["state"] == "STOPPED"]
    assert len(replaced) == 2 and all("replaced by" in t["end_reason"] for t in replaced)
    assert {t["steps_completed"] for t in trials.values() if t["state"] == "COMPLETED"} == {30}
    for child in children:
        parent = trials[child["parent_trial_id"]]
        assert child["hparams"]["lr"] != parent["hparams"]["lr"]  # explored
        steps = [s for s, _ in master.metrics(child["id"], "training", "loss")]
        # It started from its parent's checkpoint at the end of a round, not from step 0.
        assert steps[0] in (11, 21) and steps[-1] == 30
    summary = done["searcher_summary"]
    assert {entry["request_id"] for entry in summary["lineage"]} == {
        t["request_id"] for t in trials.values()
    }


OPTUNA_ASHA = """\
name: quadratic-optuna
entrypoint: python3 train.py
hyperparameters:
  lr: {type: log, base: 10, minval: -3, maxval: -0.5}
  target: 3.0
searcher:
  name: optuna
  sampler: tpe
  metric: validation_loss
  max_trials: 8
  time_metric: batches
  max_time: 64
  pruner: {name: asha, divisor: 4, num_rungs: 3}
reproducibility: {experiment_seed: 11}
max_restarts: 0
"""


def test_optuna_tpe_with_asha_pruning_runs_every_trial(master):
    done = master.wait(master.create(OPTUNA_ASHA, QUADRATIC)["id"], timeout=300)
    assert done["state"] == "COMPLETED" and len(done["trials"]) == 8
    assert {t["state"] for t in done["trials"]} <= {"COMPLETED", "STOPPED"}
    assert {t["steps_completed"] for t in done["trials"] if t["state"] == "STOPPED"} <= {4, 16}
    best = done["searcher_summary"]["best"]
    by_request = {t["request_id"]: t for t in done["trials"]}
    assert by_request[best["request_id"]]["state"] == "COMPLETED"


NSGA2 = """\
name: two-objectives
entrypoint: python3 two_objectives.py
hyperparameters:
  x: {type: double, minval: 0.0, maxval: 1.0}
searcher:
  name: optuna
  sampler: nsga2
  max_trials: 12
  objectives:
    - {metric: error, smaller_is_better: true}
    - {metric: cost, smaller_is_better: true}
reproducibility: {experiment_seed: 2}
max_restarts: 0
"""


def dominates(a: list[float], b: list[float]) -> bool:
    return all(x <= y for x, y in zip(a, b, strict=True)) and a != b


def test_multi_objective_search_shows_its_pareto_front(master):
    done = master.wait(master.create(NSGA2, CODE)["id"], timeout=300)
    assert done["state"] == "COMPLETED" and len(done["trials"]) == 12
    front = done["searcher_summary"]["pareto_front"]
    values = {
        t["request_id"]: [(t["hparams"]["x"] - 0.3) ** 2, t["hparams"]["x"]] for t in done["trials"]
    }
    members = {m["request_id"] for m in front}
    assert members
    for member in members:  # nobody beats a member of the front on both objectives
        assert not any(dominates(v, values[member]) for v in values.values())
    for other in set(values) - members:  # and everyone else is beaten by someone
        assert any(dominates(v, values[other]) for v in values.values())

    shown = master.cli("experiment", "describe", str(done["id"]))
    assert shown.returncode == 0, shown.stderr
    assert "Pareto front" in shown.stdout


def test_preview_search_shows_rungs_and_compute_without_running_anything(empty_master):
    master = empty_master
    config = str(QUADRATIC / "asha.yaml")
    shown = master.cli("preview-search", config)
    assert shown.returncode == 0, shown.stderr
    assert "Trials: 16" in shown.stdout
    assert "1024 batches" in shown.stdout  # 16 trials x 64 batches for random search
    assert "This search: 160 batches (16% of the random search)" in shown.stdout
    plan = json.loads(master.cli("preview-search", config, "--json").stdout)
    (bracket,) = plan["brackets"]
    assert [(r["trials"], r["length"]) for r in bracket["rungs"]] == [(16, 4), (4, 16), (1, 64)]
    # 16 trials to 4 batches, 4 of them on to 16, 1 on to 64
    assert plan["compute"] == 16 * 4 + 4 * 12 + 1 * 48 and plan["random_search_compute"] == 1024
    assert master.http.get("/experiments").json() == []  # nothing ran


def test_preview_search_of_a_bad_config_names_the_field(empty_master, tmp_path):
    master = empty_master
    bad = tmp_path / "bad.yaml"
    bad.write_text(asha_config(divisor=1.5))
    shown = master.cli("preview-search", str(bad))
    assert shown.returncode == 1
    assert "searcher.divisor" in shown.stderr and "at least 2" in shown.stderr
    assert "Traceback" not in shown.stderr


HYPERBAND = """\
name: quadratic-hyperband
entrypoint: python3 train.py
hyperparameters:
  lr: {type: log, base: 10, minval: -3, maxval: -0.5}
  target: 3.0
searcher:
  name: hyperband
  metric: validation_loss
  time_metric: batches
  max_time: 9
  divisor: 3
  max_rungs: 2
reproducibility: {experiment_seed: 4}
max_restarts: 0
"""


def test_hyperband_halves_each_bracket_and_describe_shows_why(master):
    # Bracket 1: 3 trials to 3 batches, the best goes on to 9; bracket 0: 2 trials to 9.
    done = master.wait(master.create(HYPERBAND, QUADRATIC)["id"], timeout=300)
    assert done["state"] == "COMPLETED" and len(done["trials"]) == 5
    ends = sorted((t["state"], t["steps_completed"]) for t in done["trials"])
    assert ends == [("COMPLETED", 9)] * 3 + [("STOPPED", 3)] * 2
    shown = master.cli("experiment", "describe", str(done["id"]))
    assert shown.returncode == 0, shown.stderr
    assert "Rung" in shown.stdout and "Why it ended" in shown.stdout
    assert "searcher stop" in shown.stdout
    as_json = json.loads(master.cli("experiment", "describe", str(done["id"]), "--json").stdout)
    assert [t["end_reason"] for t in as_json["trials"]] == [t["end_reason"] for t in done["trials"]]


def test_preview_search_of_a_search_without_a_length_counts_trials(empty_master, tmp_path):
    master = empty_master
    config = tmp_path / "random.yaml"
    config.write_text(
        "name: no-length\nentrypoint: python3 train.py\n"
        "hyperparameters: {lr: {type: double, minval: 0.01, maxval: 0.1}}\n"
        "searcher: {name: random, metric: loss, max_trials: 5}\n"
    )
    shown = master.cli("preview-search", str(config), "--json")
    assert shown.returncode == 0, shown.stderr
    plan = json.loads(shown.stdout)
    assert plan["unit"] == "trials" and plan["total_trials"] == 5
