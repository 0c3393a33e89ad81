"""Determined users' scripts run unchanged in Shipyard trials (docs/determined.md): the
`determined` the trial imports is Shipyard's shim on shipyard.core, under a real master.

The scripts in trial_code/determined are written as a Determined user writes them (a test
checks they import only `determined`, the framework and the standard library). Every
experiment is submitted at once to one master, so the module takes about one trial's time.
"""

from __future__ import annotations

import ast
import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.master import Master

CODE = Path(__file__).parent / "trial_code" / "determined"
FRAMEWORKS = {"determined", "torch", "transformers"}

CONFIGS = {
    "core_api": """
name: det-core-api
entrypoint: python3 core_api.py
hyperparameters: {lr: 0.1}
data: {dataset: tiny}
searcher: {name: single, metric: val_loss, max_length: {batches: 5}}
max_restarts: 0
""",
    "chief_only": """
name: det-chief-only
entrypoint: python3 -m determined.launch.torch_distributed -- python3 chief_only.py
resources: {slots_per_trial: 2}
searcher: {name: single, metric: val_loss, max_length: {batches: 4}}
max_restarts: 0
""",
    "searcher_ops": """
name: det-searcher-ops
entrypoint: python3 searcher_ops.py
searcher: {name: single, metric: val_loss, max_length: {batches: 8}}
max_restarts: 0
""",
    "invalid_hp": """
name: det-invalid-hp
entrypoint: python3 invalid_hp.py
hyperparameters: {lr: 10}
searcher: {name: single, metric: val_loss, max_length: {batches: 4}}
max_restarts: 3
""",
    "probe": """
name: det-probe
entrypoint: python3 probe.py
searcher: {name: single, metric: val_loss, max_length: 1}
max_restarts: 0
""",
    "opt_out": """
name: det-opt-out
entrypoint: python3 probe.py
environment: {environment_variables: [SHIPYARD_DETERMINED_SHIM=0]}
searcher: {name: single, metric: val_loss, max_length: 1}
max_restarts: 0
""",
    "hf": """
name: det-transformers
entrypoint: python3 hf_trainer.py
hyperparameters: {lr: 0.05}
environment: {environment_variables: [HF_HUB_OFFLINE=1]}
searcher: {name: single, metric: eval_loss, max_length: {batches: 12}}
max_restarts: 0
""",
}


def has(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """One master with a slot for each experiment; every experiment submitted at once.
    Yields (master, {name: experiment id})."""
    master = Master(tmp_path_factory.mktemp("determined") / "home", slots=8).start()
    try:
        names = [n for n in CONFIGS if n != "hf" or (has("transformers") and has("torch"))]
        context_id = master.upload(CODE)  # one upload for all
        ids = {}
        for name in names:
            body = {"config_yaml": CONFIGS[name], "context_id": context_id}
            created = master.http.post("/experiments", json=body)
            assert created.status_code == 201, created.text
            ids[name] = created.json()["id"]
        yield master, ids
    finally:
        master.stop()


def finished(runs, name: str) -> tuple[Master, dict, list[str]]:
    """The experiment's only trial, once it ended, and its output."""
    master, ids = runs
    done = master.wait(ids[name], timeout=120)
    trial = master.trial(done["trials"][0]["id"])
    logs = master.logs(trial["id"])
    assert done["state"] == "COMPLETED", (trial, "\n".join(logs[-40:]))
    return master, trial, logs


def line(logs: list[str], pattern: str) -> re.Match:
    for text in logs:
        found = re.search(pattern, text)
        if found:
            return found
    raise AssertionError(f"no line matches {pattern!r} in:\n" + "\n".join(logs[-40:]))


def test_the_scripts_import_only_determined_their_framework_and_the_stdlib():
    for script in sorted(CODE.glob("*.py")):
        roots = set()
        for node in ast.walk(ast.parse(script.read_text())):
            if isinstance(node, ast.Import):
                roots |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module:
                roots.add(node.module.split(".")[0])
        foreign = roots - FRAMEWORKS - set(sys.stdlib_module_names)
        assert not foreign, f"{script.name} imports {sorted(foreign)}"
        assert "determined" in roots, script.name


def test_a_core_api_script_reports_checkpoints_and_reads_its_trial(runs):
    master, trial, logs = finished(runs, "core_api")
    found = line(
        logs,
        r"info trial=(\d+) experiment=(\d+) hparams=(.*) latest=None "
        r"data=\{'dataset': 'tiny'\} container_rank=0 addr0=127.0.0.1 slots=\[(\d)\]",
    )
    assert int(found[1]) == trial["id"] and found[3] == "{'lr': 0.1}"
    line(
        logs,
        r"dist rank=0 local=0 size=1 allgather=\[1\] gather=\[2\] broadcast=3 "
        r"allgather_local=\[4\] gather_local=\[5\] broadcast_local=6",
    )
    assert master.metrics(trial["id"], "training", "loss")[-1] == (5, pytest.approx(0.2))
    assert master.metrics(trial["id"], "training", "extra") == [(5, 1.0)]
    assert master.metrics(trial["id"], "validation", "val_loss") == [(5, pytest.approx(0.2))]
    assert master.metrics(trial["id"], "validation", "acc") == [(5, 0.5)]
    # Any other group is stored and served under its name; the searcher reads validation only.
    assert master.metrics(trial["id"], "test", "acc") == [(2, 0.2), (4, 0.4)]
    assert master.metrics(trial["id"], "eval.extra", "val_loss") == [(5, 0.01)]
    assert trial["best_validation"] == trial["latest_validation"] == pytest.approx(0.2)
    groups = {(m["name"], m["group"]) for m in trial["metrics"]}
    assert {("acc", "test"), ("val_loss", "eval.extra"), ("acc", "validation")} <= groups
    names = master.http.get(f"/experiments/{trial['experiment_id']}/metric-names").json()
    assert {"name": "acc", "group": "test"} in names
    line(logs, r"refused: metric group 'has space' is not valid: it must match \^\[A-Za-z\]")
    stored = line(
        logs,
        r"checkpoints stored=(\S+) restored=\{'steps': 5\} uploaded=(\S+) "
        r"copied=\['metadata.json', 'weights.txt'\] kind=upload",
    )
    deleted, uploaded = stored[1], stored[2]
    assert master.http.get(f"/checkpoints/{uploaded}").json()["steps_completed"] == 5
    assert master.trial(trial["id"])["latest_checkpoint"] == uploaded
    # checkpoint.delete: the files and the record go; the one it resumes from is kept.
    line(logs, f"deleted {deleted}")
    assert master.http.get(f"/checkpoints/{deleted}").json()["state"] == "DELETED"
    assert not any(path.name == deleted for path in master.home.rglob(deleted))
    line(logs, f"kept {uploaded}: .*is the one trial {trial['id']} resumes from")
    line(logs, "core api done")


def test_only_the_chief_enters_store_path_in_a_two_rank_trial(runs):
    master, trial, logs = finished(runs, "chief_only")
    chief = line(logs, r"rank 0 stored (\S+)")[1]
    line(
        logs,
        r"rank 1 refused: cannot call CheckpointContext.store_path\(shard=False\) "
        r"from non-chief worker \(rank=1\)",
    )
    ranks = {}
    for rank in (0, 1):
        found = line(logs, rf"rank {rank} of 2 local {rank} sum 3 chief's (\S+) sharded (\S+)")
        ranks[rank] = (found[1], found[2])
    assert ranks[0] == ranks[1] and ranks[0][0] == chief
    assert master.http.get(f"/checkpoints/{chief}").json()["resources"] == {"model.txt": 15}
    sharded = master.http.get(f"/checkpoints/{ranks[0][1]}").json()
    assert sharded["resources"] == {"rank0.txt": 1, "rank1.txt": 1}
    # The ranks' metadata merged: steps_completed from the chief alone, a dict from both.
    assert sharded["steps_completed"] == 5
    assert sharded["metadata"]["shards"] == {"rank0": "rank0.txt", "rank1": "rank1.txt"}
    assert master.metrics(trial["id"], "validation", "val_loss") == [(4, 0.5)]
    assert len(master.metrics(trial["id"], "training", "loss")) == 4  # the chief's only


def test_report_completed_gives_the_searcher_its_metric(runs):
    master, trial, logs = finished(runs, "searcher_ops")
    line(logs, "operations done at 8")
    assert master.metrics(trial["id"], "validation", "val_loss") == [(8, 0.125)]
    assert master.trial(trial["id"])["steps_completed"] == 8


def test_invalid_hp_ends_the_trial_without_a_restart(runs):
    master, trial, logs = finished(runs, "invalid_hp")
    assert trial["restarts"] == 0 and len(trial["runs"]) == 1, trial["runs"]
    assert "InvalidHP: lr 10 diverges" in trial["runs"][0]["ended_how"]
    assert master.metrics(trial["id"], "training", "loss") == [(1, 1.0)]
    assert not any("not reached" in text for text in logs)


def outside() -> str:
    """What `import determined` is without the shim: Determined's own package, which
    requirements-test.txt installs. Without it these tests would prove nothing (a trial
    without the shim would import nothing at all), so its absence fails them."""
    if not has("determined"):
        pytest.fail(
            "Determined's own package is not installed in this venv (requirements-test.txt "
            "pins determined==0.38.1): run `make setup`",
            pytrace=False,
        )
    return "real"


def test_a_trial_imports_the_shim_even_where_determined_is_installed(runs):
    assert outside() == "real"
    _master, _trial, logs = finished(runs, "probe")
    assert line(logs, r"determined: (none|real|shim)")[1] == "shim"


def test_the_opt_out_leaves_the_trial_without_the_shim(runs):
    _master, _trial, logs = finished(runs, "opt_out")
    assert line(logs, r"determined: (none|real|shim)")[1] == outside()


def test_det_transformers_callback_reports_to_shipyard(runs):
    if "hf" not in runs[1]:
        from tests.fixtures.require import missing

        missing("transformers and torch: the huggingface extra; make setup installs it")
    master, trial, _logs = finished(runs, "hf")
    assert [step for step, _ in master.metrics(trial["id"], "validation", "eval_loss")] == [6, 12]
    assert master.metrics(trial["id"], "training", "loss")
    checkpoint = master.http.get(f"/checkpoints/{trial['latest_checkpoint']}").json()
    assert checkpoint["steps_completed"] == 12


def test_import_determined_outside_a_trial_is_not_the_shim():
    probe = (CODE / "probe.py").read_text()
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith(f"determined: {outside()}"), out.stdout
