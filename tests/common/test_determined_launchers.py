"""`shipyard config validate` knows Determined's launchers (python3 -m determined.launch.*),
which Shipyard's `determined` shim runs, and where the shim goes on a trial's PYTHONPATH."""

from __future__ import annotations

import os

import pytest

from shipyard.common.config import load_config, validate_context
from shipyard.common.determined_shim import SHIM_ENV, shim_dir, with_shim
from shipyard.common.errors import NotSupportedYet
from tests.common.conftest import config_error, detail_at

SEARCHER = "searcher: {name: single, metric: loss}\n"
LAUNCH = "python3 -m determined.launch."


def _cfg(entrypoint: str):
    return load_config(f"entrypoint: {entrypoint}\nresources: {{slots_per_trial: 2}}\n" + SEARCHER)


@pytest.mark.parametrize(
    "entrypoint",
    [
        LAUNCH + "torch_distributed python3 train.py",
        LAUNCH + "torch_distributed --nproc_per_node 2 --max_restarts 0 -- python3 train.py",
        LAUNCH + "tensorflow --port 1234 -- python3 train.py",
        LAUNCH + "tensorflow python3 train.py",
        LAUNCH + "deepspeed -- python3 train.py",
        LAUNCH + "wrap_rank 0 python3 train.py",
    ],
)
def test_determined_launchers_run_the_script_of_the_context(entrypoint):
    cfg = _cfg(entrypoint)
    validate_context(cfg, {"train.py"})
    assert "train.py" in str(config_error(validate_context, cfg, {"other.py"}))


@pytest.mark.parametrize(
    ("entrypoint", "error", "says"),
    [
        (LAUNCH + "horovod python3 train.py", NotSupportedYet, "shipyard.launch.mpi"),
        (LAUNCH + "torch_distributed --trial model_def:MyTrial", NotSupportedYet, "--trial"),
        (LAUNCH + "torchrun python3 train.py", None, "the ones it runs are"),
        (LAUNCH + "tensorflow --port 1234", None, "needs the command to run"),
        (LAUNCH + "torch_distributed --nproc_per_node 2 --", None, "needs the command to run"),
    ],
)
def test_determined_launchers_misused_are_refused_with_what_to_do(entrypoint, error, says):
    problem = config_error(_cfg, entrypoint)
    if error is not None:
        assert isinstance(problem, error)
    assert says in detail_at(problem, "entrypoint")["message"]


def test_deepspeed_trial_refused_without_pointing_at_model_def():
    # A DeepSpeedTrial given as model_def:X is refused when the trial starts too.
    problem = config_error(_cfg, LAUNCH + "deepspeed --trial model_def:MyTrial")
    assert isinstance(problem, NotSupportedYet)
    message = detail_at(problem, "entrypoint")["message"]
    assert "a DeepSpeedTrial is not supported either" in message
    assert "model_def" not in message


def test_the_shim_goes_first_on_the_trials_path_once_unless_turned_off():
    env = {"PYTHONPATH": os.pathsep.join(["/user/lib", shim_dir()])}
    assert with_shim(env)["PYTHONPATH"] == os.pathsep.join([shim_dir(), "/user/lib"])
    assert with_shim({})["PYTHONPATH"] == shim_dir()
    assert os.path.isdir(os.path.join(shim_dir(), "determined"))
    # In a container the package is mounted elsewhere: the path is made from that root.
    inside = with_shim({}, "/opt/shipyard/lib")["PYTHONPATH"]
    assert inside == "/opt/shipyard/lib/shipyard/integrations/determined_compat"
    for off in ("0", "false", "off"):
        assert "PYTHONPATH" not in with_shim({SHIM_ENV: off})
