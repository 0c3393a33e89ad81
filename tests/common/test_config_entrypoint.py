"""Entrypoint forms, the script they run, the context check and environment variable forms."""

from __future__ import annotations

import pytest

from shipyard.common.config import load_config, validate_context
from shipyard.common.errors import ConfigError, NotSupportedYet
from tests.common.conftest import config_error, detail_at

SEARCHER = "searcher: {name: single, metric: loss}\n"


def _cfg(entrypoint: str, extra: str = ""):
    return load_config(f"entrypoint: {entrypoint}\n" + SEARCHER + extra)


@pytest.mark.parametrize(
    ("entrypoint", "argv", "script"),
    [
        ("python3 train.py --lr 0.1", ["python3", "train.py", "--lr", "0.1"], "train.py"),
        ("python -u src/train.py", ["python", "-u", "src/train.py"], "src/train.py"),
        ("python3.11 -X dev ./train.py", ["python3.11", "-X", "dev", "./train.py"], "train.py"),
        ("python3 -m mypkg.train --x 1", ["python3", "-m", "mypkg.train", "--x", "1"], None),
        ("./run.sh", ["./run.sh"], "run.sh"),
        ("bash scripts/run.sh fast", ["bash", "scripts/run.sh", "fast"], "scripts/run.sh"),
        ("/usr/bin/python3 train.py", ["/usr/bin/python3", "train.py"], "train.py"),
        ("torchrun --nproc_per_node 2 train.py", None, None),
        ("'python3 \"my train.py\"'", ["python3", "my train.py"], "my train.py"),
        (
            "[python3, train.py, --epochs, '2']",
            ["python3", "train.py", "--epochs", "2"],
            "train.py",
        ),
    ],
)
def test_entrypoint_forms(entrypoint, argv, script):
    cfg = _cfg(entrypoint)
    if argv is not None:
        assert cfg.entrypoint_argv() == argv
    assert cfg.entrypoint_script() == script


@pytest.mark.parametrize(
    ("entrypoint", "message"),
    [
        ("''", "the entrypoint is empty"),
        ("[]", "the entrypoint is empty"),
        ("[python3, 3]", "expected a command string"),
        ("{cmd: train}", "expected a command string"),
        ("'python3 \"unclosed'", "cannot split the entrypoint"),
    ],
)
def test_bad_entrypoints(entrypoint, message):
    error = config_error(_cfg, entrypoint)
    assert message in detail_at(error, "entrypoint")["message"]


def test_validate_context_accepts_the_script_and_modules():
    validate_context(_cfg("python3 train.py"), {"train.py", "model.py"})
    validate_context(_cfg("python3 ./src/train.py"), {"src/train.py"})
    validate_context(_cfg("python3 -m mypkg"), set())


def test_validate_context_names_the_missing_script():
    cfg = load_config("name: x\nentrypoint: python3 train.py\n" + SEARCHER)
    with pytest.raises(ConfigError) as info:
        validate_context(cfg, {"model.py", "data/train.py"})
    (detail,) = info.value.details
    assert detail["path"] == "entrypoint"
    assert "train.py" in detail["message"] and "not in the uploaded context" in detail["message"]
    assert detail["line"] == 2
    with pytest.raises(ConfigError, match="context is empty"):
        validate_context(cfg, set())


@pytest.mark.parametrize(
    "variables",
    [
        "['A=1', 'B=x=y', 'EMPTY=']",
        "{A: 1, B: x=y, EMPTY: ''}",
        "{cpu: ['A=1', 'B=wrong'], cuda: ['B=x=y', 'EMPTY=']}",
    ],
)
def test_environment_variable_forms(variables):
    cfg = _cfg("python3 t.py", f"environment: {{environment_variables: {variables}}}\n")
    assert cfg.env_vars() == {"A": "1", "B": "x=y", "EMPTY": ""}


def test_environment_variable_booleans_read_as_yaml_wrote_them():
    cfg = _cfg("python3 t.py", "environment: {environment_variables: {DEBUG: true, N: 2.5}}\n")
    assert cfg.env_vars() == {"DEBUG": "true", "N": "2.5"}


def test_bad_environment_variables():
    error = config_error(
        _cfg, "python3 t.py", "environment:\n  environment_variables: [A=1, NOEQUALS]\n"
    )
    detail = detail_at(error, "environment.environment_variables[1]")
    assert detail["message"] == "expected \"NAME=value\", got 'NOEQUALS'"
    assert detail["line"] == 4
    error = config_error(
        _cfg, "python3 t.py", "environment: {environment_variables: {A: [1, 2]}}\n"
    )
    assert detail_at(error, "environment.environment_variables.A")["message"] == (
        "expected a string or number, got a list"
    )


@pytest.mark.parametrize(
    "entrypoint",
    [
        "python3 -m shipyard.launch.torch_distributed python3 train.py",
        "python3 -u -m shipyard.launch.torch_distributed -- python3 train.py --lr 1",
        "python -m shipyard.launch.torch_distributed --nproc 2 python3 train.py",
        "[python3, -m, shipyard.launch.torch_distributed, python3, train.py]",
        "python3 -m shipyard.launch.tensorflow python3 train.py",
        "python3 -m shipyard.launch.tensorflow --ps 2 python3 train.py",
        "python3 -m shipyard.launch.tensorflow --nproc=2 --ps=1 -- python3 -u train.py",
        "[python3, -m, shipyard.launch.tensorflow, --ps, '1', python3, train.py]",
        "python3 -m shipyard.launch.mpi python3 train.py",
        "python3 -m shipyard.launch.mpi --nproc=2 -- python3 -u train.py",
        "[python3, -m, shipyard.launch.mpi, python3, train.py]",
    ],
)
def test_the_launchers_are_accepted_and_their_script_checked(entrypoint):
    cfg = _cfg(entrypoint)
    assert cfg.entrypoint_script() == "train.py"
    validate_context(cfg, {"train.py"})
    with pytest.raises(ConfigError, match="train.py"):
        validate_context(cfg, {"model.py"})


@pytest.mark.parametrize(
    ("entrypoint", "message", "not_yet"),
    [
        (
            "python3 -m shipyard.launch.does_not_exist python3 train.py",
            "there is no launcher",
            False,
        ),
        ("python3 -mshipyard.launch.torchrun python3 train.py", "there is no launcher", False),
        ("python3 -m shipyard.launch.torch_distributed", "needs the command to run", False),
        ("python3 -m shipyard.launch.torch_distributed --nproc 2 --", "needs the command", False),
    ],
)
def test_unknown_launchers_are_refused_naming_the_known_ones(entrypoint, message, not_yet):
    error = config_error(_cfg, entrypoint)
    assert isinstance(error, NotSupportedYet) == not_yet
    detail = detail_at(error, "entrypoint")["message"]
    assert message in detail and "shipyard.launch.torch_distributed" in detail


def test_the_tensorflow_launcher_needs_a_command_after_its_options():
    error = config_error(_cfg, "python3 -m shipyard.launch.tensorflow --ps 1 --nproc 2 --")
    assert not isinstance(error, NotSupportedYet)
    assert (
        "shipyard.launch.tensorflow needs the command" in detail_at(error, "entrypoint")["message"]
    )


def test_the_mpi_launcher_needs_a_command_after_its_options():
    error = config_error(_cfg, "python3 -m shipyard.launch.mpi --nproc 2 --")
    assert not isinstance(error, NotSupportedYet)
    assert "shipyard.launch.mpi needs the command" in detail_at(error, "entrypoint")["message"]


def test_other_modules_under_python_m_are_left_alone():
    assert _cfg("python3 -m shipyard_launch_fork.x python3 t.py").entrypoint_script() is None
    assert _cfg("python3 -m mypkg.launch.nope").entrypoint_script() is None
