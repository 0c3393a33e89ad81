"""One row per config rule the searchers depend on: the config fragment, the field path
and the one message, the same from `shipyard config validate` (the CLI's own app, run
in-process as tests/cli do), from the API (a real master over HTTP: a 422 whose details
carry them) and from the SDK (shipyard.client raising ConfigError before anything is sent).
Every rule lives in common/config only; the searchers receive the validated model."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from shipyard.cli.main import app as cli_app
from shipyard.client import Shipyard
from shipyard.common.errors import ConfigError
from tests.e2e.master import Master

LENGTH = {"max_length": 100}
OPTUNA = {"name": "optuna", "metric": "loss", "max_trials": 8, **LENGTH}
TWO_OBJECTIVES = {"objectives": [{"metric": "loss"}, {"metric": "latency"}]}
PBT = {
    "name": "pbt",
    "metric": "loss",
    "population_size": 4,
    "num_rounds": 2,
    "length_per_round": {"batches": 10},
    "replace_function": {"truncate_fraction": 0.25},
    "explore_function": {"resample_probability": 0.2, "perturb_factor": 0.2},
}
LR = {"lr": {"type": "double", "minval": 0.1, "maxval": 0.5}}

# (id, searcher section, hyperparameters, path, message)
RULES: list[tuple[str, dict[str, Any], dict[str, Any], str, str]] = [
    (
        "random needs max_trials",
        {"name": "random", "metric": "loss"},
        LR,
        "searcher.max_trials",
        "required field is missing",
    ),
    (
        "time_metric needs max_time",
        {"name": "hyperband", "metric": "loss", "time_metric": "batches"},
        LR,
        "searcher.max_time",
        "time_metric 'batches' needs max_time: how far a trial trains, in batches",
    ),
    (
        "halving needs a length",
        {"name": "hyperband", "metric": "loss"},
        LR,
        "searcher.max_length",
        "hyperband needs a training length: max_length (like {batches: 1000}), "
        "or max_time with time_metric",
    ),
    (
        "divisor at least 2",
        {"name": "adaptive_asha", "metric": "loss", "max_trials": 8, "divisor": 1.5, **LENGTH},
        LR,
        "searcher.divisor",
        "divisor must be at least 2, got 1.5",
    ),
    (
        "mode",
        {"name": "adaptive_asha", "metric": "loss", "max_trials": 8, "mode": "wild", **LENGTH},
        LR,
        "searcher.mode",
        "expected 'aggressive', 'standard' or 'conservative', got 'wild'",
    ),
    (
        "rungs fit in the length",
        {
            "name": "async_halving",
            "metric": "loss",
            "max_trials": 8,
            "num_rungs": 2,
            "max_length": 3,
        },
        LR,
        "searcher.max_length",
        "max_length 3 is too short for 2 rungs with divisor 4: the first rung would need 0.75; "
        "use max_length >= 4 or fewer rungs",
    ),
    (
        "adaptive_asha trials cover the brackets",
        {
            "name": "adaptive_asha",
            "metric": "loss",
            "max_trials": 2,
            "bracket_rungs": [1, 2, 3],
            **LENGTH,
        },
        LR,
        "searcher.max_trials",
        "2 trials are too few for the brackets [3, 2, 1]: raise max_trials or list fewer "
        "bracket_rungs",
    ),
    (
        "hyperband length above the divisor",
        {"name": "hyperband", "metric": "loss", "max_length": 2},
        LR,
        "searcher.max_length",
        "max_length 2 is too short for 2 rungs with divisor 3: the first rung would need 0.67; "
        "use max_length >= 3 or fewer rungs",
    ),
    (
        "hyperband max_trials covers the brackets",
        {"name": "hyperband", "metric": "loss", "max_length": 81, "max_trials": 100},
        LR,
        "searcher.max_trials",
        "hyperband with 81 steps, divisor 3 and max_rungs 5 needs 143 trials, got 100: "
        "raise max_trials, lower max_rungs or leave max_trials out",
    ),
    (
        "pbt length unit is the time_metric",
        {**PBT, "time_metric": "batches", "length_per_round": {"epochs": 2}},
        LR,
        "searcher.length_per_round",
        "with time_metric 'batches', length_per_round counts batches: write length_per_round: 2",
    ),
    (
        "pbt has no max_length",
        {**PBT, **LENGTH},
        LR,
        "searcher.max_length",
        "pbt trains num_rounds rounds of length_per_round; max_length is not used",
    ),
    (
        "pbt truncate_fraction",
        {**PBT, "replace_function": {"truncate_fraction": 0.6}},
        LR,
        "searcher.replace_function.truncate_fraction",
        "must be at most 0.5, got 0.6",
    ),
    (
        "optuna sampler",
        {**OPTUNA, "sampler": "bayes"},
        LR,
        "searcher.sampler",
        "expected 'tpe', 'cmaes', 'gp', 'random' or 'nsga2', got 'bayes'",
    ),
    (
        "optuna multi-objective sampler",
        {**OPTUNA, "sampler": "cmaes", **TWO_OBJECTIVES},
        LR,
        "searcher.sampler",
        "sampler cmaes optimizes one objective, and objectives has 2; use tpe, nsga2 or random",
    ),
    (
        "optuna prunes one objective",
        {**OPTUNA, "pruner": {"name": "median"}, **TWO_OBJECTIVES},
        LR,
        "searcher.pruner",
        "pruner median needs a single objective (Optuna cannot prune a multi-objective "
        "study), and objectives has 2; use pruner {name: none}",
    ),
    (
        "optuna pruner needs a length",
        {**OPTUNA, "max_length": None, "pruner": {"name": "median"}},
        LR,
        "searcher.pruner",
        "pruner median needs a training length: max_length, or max_time with time_metric",
    ),
    (
        "optuna asha pruner rungs fit",
        {**OPTUNA, "pruner": {"name": "asha", "num_rungs": 9}},
        LR,
        "searcher.max_length",
        "max_length 100 is too short for 9 rungs with divisor 4: the first rung would need "
        "0.0015; use max_length >= 65536 or fewer rungs",
    ),
    (
        "optuna pruner fields",
        {**OPTUNA, "pruner": {"name": "median", "divisor": 3}},
        LR,
        "searcher.pruner.divisor",
        "unknown field 'divisor'",
    ),
    (
        "optuna percentile",
        {**OPTUNA, "pruner": {"name": "percentile", "percentile": 120}},
        LR,
        "searcher.pruner.percentile",
        "must be between 0 and 100, got 120",
    ),
    (
        "optuna reduction_factor",
        {**OPTUNA, "pruner": {"name": "hyperband", "reduction_factor": 1}},
        LR,
        "searcher.pruner.reduction_factor",
        "must be at least 2, got 1",
    ),
    (
        "optuna objectives differ",
        {**OPTUNA, "objectives": [{"metric": "loss"}, {"metric": "loss"}]},
        LR,
        "searcher.objectives[1].metric",
        "metric 'loss' is already an objective",
    ),
    (
        "optuna metric is the first objective's",
        {**OPTUNA, "metric": "acc", "objectives": [{"metric": "loss"}]},
        LR,
        "searcher.metric",
        "metric 'acc' differs from the first objective's ('loss'); leave metric out or make "
        "them the same",
    ),
    (
        "optuna names are unique",
        OPTUNA,
        {
            "a.b": {"type": "int", "minval": 1, "maxval": 2},
            "a": {"b": {"type": "int", "minval": 1, "maxval": 2}},
        },
        "hyperparameters.a.b",
        "two hyperparameters have the Optuna name 'a.b'; rename one",
    ),
    (
        "optuna log range exists",
        OPTUNA,
        {"lr": {"type": "log", "minval": 0, "maxval": 400, "base": 10}},
        "hyperparameters.lr",
        "base**minval and base**maxval must be positive floats, got 1.0, inf",
    ),
    (
        "grid needs a count",
        {"name": "grid", "metric": "loss"},
        LR,
        "hyperparameters.lr.count",
        "grid search needs a count for double hyperparameter hyperparameters.lr",
    ),
]


def config_yaml(searcher: dict[str, Any], hyperparameters: dict[str, Any]) -> str:
    section = {k: v for k, v in searcher.items() if v is not None}
    config = {"entrypoint": "python3 train.py", "hyperparameters": hyperparameters}
    return yaml.safe_dump({**config, "searcher": section}, sort_keys=False)


@pytest.fixture(scope="module")
def master(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Master]:
    """One master for the whole table."""
    running = Master(tmp_path_factory.mktemp("rules") / "home", slots=1).start()
    yield running
    running.stop()


@pytest.mark.parametrize(
    ("searcher", "hyperparameters", "path", "message"),
    [row[1:] for row in RULES],
    ids=[row[0] for row in RULES],
)
def test_one_message_from_the_cli_the_api_and_the_sdk(
    master: Master,
    tmp_path: Path,
    searcher: dict[str, Any],
    hyperparameters: dict[str, Any],
    path: str,
    message: str,
) -> None:
    text = config_yaml(searcher, hyperparameters)
    file = tmp_path / "exp.yaml"
    file.write_text(text)
    (tmp_path / "train.py").write_text("")

    cli = CliRunner().invoke(
        cli_app,
        ["config", "validate", str(file)],
        env={"COLUMNS": "1000", "SHIPYARD_HOME": str(tmp_path / "home")},
    )
    assert cli.exit_code == 1, cli.stdout + cli.stderr
    assert path in cli.stderr and message in cli.stderr, cli.stderr

    api = master.post_experiment(text, None)
    assert api.status_code == 422, api.text
    details = api.json()["error"]["details"]
    assert [(d["path"], d["message"]) for d in details] == [(path, message)]

    with pytest.raises(ConfigError) as sdk:
        Shipyard(master.url).create_experiment(file, tmp_path)
    assert [(d["path"], d["message"]) for d in sdk.value.details] == [(path, message)]


def test_every_searcher_rule_module_has_a_row() -> None:
    """The table covers each searcher family whose rules moved out of search/."""
    named = {row[1].get("name") for row in RULES}
    assert {
        "random",
        "grid",
        "adaptive_asha",
        "async_halving",
        "hyperband",
        "pbt",
        "optuna",
    } <= named
