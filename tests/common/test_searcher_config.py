"""The searcher section of every searcher that runs: Determined-style configs load and give
the plain dict the search package reads (searcher_dict); bad ones name the field, its line
and column; and every example in docs/searchers.md loads."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from shipyard.common.config import (
    config_from_dict,
    load_config,
    load_config_file,
    searcher_from_json,
)
from shipyard.common.errors import ConfigError, NotSupportedYet
from tests.common.conftest import CONFIGS, config_error, detail_at

HEAD = "entrypoint: python3 train.py\nsearcher:\n"
# Fields every searcher_dict() has, at their defaults.
COMMON = {
    "metric": "loss",
    "smaller_is_better": True,
    "max_length": None,
    "max_length_unit": None,
    "time_metric": None,
    "max_time": None,
    "max_concurrent_trials": 16,
    "source_trial_id": None,
    "source_checkpoint_uuid": None,
}


def searcher_yaml(*lines: str) -> str:
    """The searcher section in block style: the first field is on line 3, column 3."""
    return HEAD + "".join(f"  {line}\n" for line in lines)


def load_searcher(*lines: str) -> dict:
    return load_config(searcher_yaml(*lines)).searcher_dict()


def error_at(path: str, *lines: str) -> dict:
    """The one problem a searcher section has, which must be at `path`."""
    error = config_error(load_config, searcher_yaml(*lines))
    assert type(error) is ConfigError, error.details  # a mistake, not a missing feature
    assert [d["path"] for d in error.details] == [path], error.details
    return detail_at(error, path)


ASHA = ("name: adaptive_asha", "metric: loss", "max_trials: 16")
HALVING = ("name: async_halving", "metric: loss", "max_trials: 16", "num_rungs: 3")
HYPERBAND = ("name: hyperband", "metric: loss")
PBT = (
    "name: pbt",
    "metric: loss",
    "population_size: 8",
    "num_rounds: 4",
    "replace_function: {truncate_fraction: 0.25}",
    "explore_function: {resample_probability: 0.2, perturb_factor: 0.2}",
)
OPTUNA = ("name: optuna", "max_trials: 20")


# --- what loads, and the dict it gives ---------------------------------------------------


def test_determined_adaptive_asha_example_runs_with_determined_defaults():
    cfg = load_config_file(CONFIGS / "adaptive.yaml")  # Determined's mnist adaptive.yaml
    assert cfg.searcher_dict() == {
        **COMMON,
        "name": "adaptive_asha",
        "metric": "validation_loss",
        "max_trials": 16,
        "max_length": 937,
        "max_length_unit": "batches",
        "mode": "standard",
        "divisor": 4.0,
        "max_rungs": 5,
        "bracket_rungs": [],
        "stop_once": False,
    }
    assert cfg.to_json_dict()["searcher"] == cfg.searcher_dict()


def test_adaptive_asha_with_time_metric_and_every_field():
    searcher = load_searcher(
        *ASHA,
        "time_metric: batches",
        "max_time: 6400",
        "mode: aggressive",
        "divisor: 2",
        "max_rungs: 3",
        "bracket_rungs: [4, 2]",
        "max_concurrent_trials: 0",
        "stop_once: true",
        "smaller_is_better: false",
    )
    assert searcher == {
        **COMMON,
        "name": "adaptive_asha",
        "smaller_is_better": False,
        "time_metric": "batches",
        "max_time": 6400,
        "max_concurrent_trials": 0,
        "max_trials": 16,
        "mode": "aggressive",
        "divisor": 2.0,
        "max_rungs": 3,
        "bracket_rungs": [4, 2],
        "stop_once": True,
    }


def test_adaptive_asha_reachable_bracket_rungs_at_the_limit():
    # 4 rungs with divisor 4: the first rung trains 64 / 4**3 = 1 batch.
    searcher = load_searcher(*ASHA, "max_length: {batches: 64}", "bracket_rungs: [4]")
    assert searcher["bracket_rungs"] == [4]
    # Without bracket_rungs, max_rungs is only a cap: a short max_length is fine.
    assert load_searcher(*ASHA, "max_length: 3", "max_rungs: 5")["max_rungs"] == 5


def test_async_halving():
    searcher = load_searcher(*HALVING, "max_length: {epochs: 16}", "divisor: 4")
    assert searcher == {
        **COMMON,
        "name": "async_halving",
        "max_length": 16,
        "max_length_unit": "epochs",
        "num_rungs": 3,
        "max_trials": 16,
        "divisor": 4.0,
        "stop_once": False,
    }


def test_hyperband_defaults():
    searcher = load_searcher(*HYPERBAND, "time_metric: batches", "max_time: 810")
    assert searcher == {
        **COMMON,
        "name": "hyperband",
        "time_metric": "batches",
        "max_time": 810,
        "max_concurrent_trials": 0,  # unlike the others: no limit
        "divisor": 3.0,
        "max_rungs": 5,
        "max_trials": None,
    }
    searcher = load_searcher(*HYPERBAND, "max_length: 100", "max_trials: 30", "max_rungs: 2")
    assert (searcher["max_trials"], searcher["max_rungs"]) == (30, 2)


def test_pbt_length_per_round_in_determined_form():
    searcher = load_searcher(*PBT, "length_per_round: {batches: 500}")
    assert searcher == {
        **COMMON,
        "name": "pbt",
        "population_size": 8,
        "num_rounds": 4,
        "length_per_round": 500,
        "length_per_round_unit": "batches",
        "replace_function": {"truncate_fraction": 0.25},
        "explore_function": {"resample_probability": 0.2, "perturb_factor": 0.2},
    }


def test_pbt_length_per_round_in_time_metric():
    searcher = load_searcher(*PBT, "time_metric: batches", "length_per_round: 500")
    assert (searcher["length_per_round"], searcher["length_per_round_unit"]) == (500, None)
    assert searcher["time_metric"] == "batches"
    # the map form naming the time_metric itself is the same thing
    searcher = load_searcher(*PBT, "time_metric: batches", "length_per_round: {batches: 500}")
    assert searcher["length_per_round"] == 500


def test_optuna_single_objective_defaults():
    searcher = load_searcher(*OPTUNA, "metric: loss")
    assert searcher == {
        **COMMON,
        "name": "optuna",
        "sampler": "tpe",
        "max_trials": 20,
        "max_concurrent_trials": 4,  # Optuna learns from finished trials: few at once
        "objectives": [{"metric": "loss", "smaller_is_better": True}],
        "pruner": {"name": "none"},
    }


def test_optuna_multi_objective_takes_metric_from_the_first_objective():
    searcher = load_searcher(
        *OPTUNA,
        "sampler: nsga2",
        "objectives:",
        "  - {metric: accuracy, smaller_is_better: false}",
        "  - {metric: latency_ms}",
    )
    assert searcher["metric"] == "accuracy"
    assert searcher["smaller_is_better"] is False
    assert searcher["objectives"] == [
        {"metric": "accuracy", "smaller_is_better": False},
        {"metric": "latency_ms", "smaller_is_better": True},
    ]
    assert searcher["sampler"] == "nsga2"
    # metric may be given too when it is the first objective's
    searcher = load_searcher(
        *OPTUNA, "metric: loss", "objectives: [{metric: loss}, {metric: size}]", "sampler: random"
    )
    assert searcher["metric"] == "loss"


@pytest.mark.parametrize(
    ("pruner", "expected"),
    [
        ("{name: none}", {"name": "none"}),
        ("{name: asha}", {"name": "asha", "divisor": 4.0, "num_rungs": 4}),
        (
            "{name: asha, divisor: 2, num_rungs: 3}",
            {"name": "asha", "divisor": 2.0, "num_rungs": 3},
        ),
        ("{name: median}", {"name": "median", "n_startup_trials": 5, "n_warmup_steps": 0}),
        (
            "{name: percentile, percentile: 25, n_warmup_steps: 10}",
            {"name": "percentile", "percentile": 25.0, "n_startup_trials": 5, "n_warmup_steps": 10},
        ),
        (
            "{name: successive_halving}",
            {"name": "successive_halving", "min_resource": 1, "reduction_factor": 3},
        ),
        (
            "{name: hyperband, min_resource: 10, reduction_factor: 2}",
            {"name": "hyperband", "min_resource": 10, "reduction_factor": 2},
        ),
    ],
)
def test_optuna_pruners(pruner, expected):
    searcher = load_searcher(
        *OPTUNA, "metric: loss", "sampler: cmaes", "max_length: 1000", f"pruner: {pruner}"
    )
    assert searcher["pruner"] == expected
    assert searcher["sampler"] == "cmaes"


@pytest.mark.parametrize("sampler", ["tpe", "cmaes", "gp", "random", "nsga2"])
def test_every_optuna_sampler_loads(sampler):
    assert load_searcher(*OPTUNA, "metric: loss", f"sampler: {sampler}")["sampler"] == sampler


def test_optuna_length_forms_are_optional_without_a_pruner():
    searcher = load_searcher(*OPTUNA, "metric: loss", "time_metric: epochs", "max_time: 10")
    assert (searcher["time_metric"], searcher["max_time"]) == ("epochs", 10)


def test_config_from_dict_gives_the_same_searcher_dict():
    text_cfg = load_config(searcher_yaml(*HALVING, "max_length: 100"))
    dict_cfg = config_from_dict(
        {
            "entrypoint": "python3 train.py",
            "searcher": {
                "name": "async_halving",
                "metric": "loss",
                "max_trials": 16,
                "num_rungs": 3,
                "max_length": 100,
            },
        }
    )
    assert dict_cfg.searcher_dict() == text_cfg.searcher_dict()


# --- what is refused ----------------------------------------------------------------------


@pytest.mark.parametrize("value", ["1.5", "1"])
@pytest.mark.parametrize(
    "searcher",
    [ASHA + ("max_length: 100",), HALVING + ("max_length: 100",), HYPERBAND + ("max_length: 100",)],
    ids=["adaptive_asha", "async_halving", "hyperband"],
)
def test_divisor_below_two(searcher, value):
    detail = error_at("searcher.divisor", *searcher, f"divisor: {value}")
    assert detail["message"] == f"divisor must be at least 2, got {value}"
    assert (detail["line"], detail["column"]) == (3 + len(searcher), 12)


@pytest.mark.parametrize("value", ["1.5", "1"])
def test_optuna_asha_pruner_divisor_below_two(value):
    detail = error_at(
        "searcher.pruner.divisor",
        *OPTUNA,
        "metric: loss",
        "max_length: 100",
        f"pruner: {{name: asha, divisor: {value}}}",
    )
    assert detail["message"] == f"divisor must be at least 2, got {value}"
    assert detail["line"] == 7


def test_unreachable_bracket_rungs_name_the_numbers():
    detail = error_at(
        "searcher.max_time", *ASHA, "time_metric: batches", "max_time: 10", "bracket_rungs: [2, 4]"
    )
    assert detail["message"] == (
        "max_time 10 is too short for 4 rungs with divisor 4: the first rung would need "
        "0.16 batches; use max_time >= 64 or fewer rungs"
    )
    assert (detail["line"], detail["column"]) == (7, 13)


def test_unreachable_num_rungs_in_async_halving():
    detail = error_at(
        "searcher.max_length", *HALVING, "max_length: {batches: 8}", "divisor: 3"
    )  # 3 rungs: 8 / 3**2 < 1
    assert detail["message"] == (
        "max_length 8 is too short for 3 rungs with divisor 3: the first rung would need "
        "0.89 batches; use max_length >= 9 or fewer rungs"
    )
    assert detail["line"] == 7


def test_unreachable_rungs_of_the_optuna_asha_pruner():
    detail = error_at(
        "searcher.max_length",
        *OPTUNA,
        "metric: loss",
        "max_length: 10",
        "pruner: {name: asha, num_rungs: 4}",
    )
    assert "too short for 4 rungs with divisor 4" in detail["message"]


def test_absurd_rung_counts_do_not_overflow():
    detail = error_at("searcher.max_length", *ASHA, "max_length: 100", "bracket_rungs: [1000]")
    assert detail["message"].endswith("use fewer rungs")


@pytest.mark.parametrize(
    "searcher",
    [ASHA + ("max_length: 100",), HALVING + ("max_length: 100",), OPTUNA + ("metric: loss",)],
    ids=["adaptive_asha", "async_halving", "optuna"],
)
def test_max_trials_zero(searcher):
    lines = [line for line in searcher if not line.startswith("max_trials")]
    detail = error_at("searcher.max_trials", *lines, "max_trials: 0")
    assert detail["message"] == "must be at least 1, got 0"
    assert (detail["line"], detail["column"]) == (3 + len(lines), 15)


def test_hyperband_max_trials_zero():
    detail = error_at("searcher.max_trials", *HYPERBAND, "max_length: 100", "max_trials: 0")
    assert detail["message"] == "must be at least 1, got 0"


@pytest.mark.parametrize(
    "searcher", [ASHA, HALVING, HYPERBAND], ids=["adaptive_asha", "async_halving", "hyperband"]
)
def test_missing_length(searcher):
    detail = error_at("searcher.max_length", *searcher)
    name = searcher[0].removeprefix("name: ")
    assert detail["message"] == (
        f"{name} needs a training length: max_length (like {{batches: 1000}}), "
        "or max_time with time_metric"
    )
    assert detail["line"] == 3  # the searcher's own line: the field is not there


@pytest.mark.parametrize(
    "searcher",
    [ASHA, HALVING, HYPERBAND, OPTUNA + ("metric: loss",)],
    ids=["adaptive_asha", "async_halving", "hyperband", "optuna"],
)
def test_time_metric_and_max_time_come_together(searcher):
    detail = error_at("searcher.max_time", *searcher, "time_metric: batches")
    assert detail["message"] == (
        "time_metric 'batches' needs max_time: how far a trial trains, in batches"
    )
    detail = error_at("searcher.time_metric", *searcher, "max_time: 100")
    assert detail["message"].startswith("max_time needs time_metric")
    detail = error_at(
        "searcher.max_length", *searcher, "time_metric: batches", "max_time: 100", "max_length: 100"
    )
    assert detail["message"] == "give max_length or time_metric with max_time, not both"
    assert (detail["line"], detail["column"]) == (5 + len(searcher), 15)


def test_unknown_optuna_sampler():
    detail = error_at("searcher.sampler", *OPTUNA, "metric: loss", "sampler: bayes")
    assert detail["message"] == ("expected 'tpe', 'cmaes', 'gp', 'random' or 'nsga2', got 'bayes'")
    assert (detail["line"], detail["column"]) == (6, 12)


@pytest.mark.parametrize("sampler", ["cmaes", "gp"])
def test_multi_objective_needs_a_multi_objective_sampler(sampler):
    detail = error_at(
        "searcher.sampler",
        *OPTUNA,
        f"sampler: {sampler}",
        "objectives: [{metric: loss}, {metric: latency}]",
    )
    assert detail["message"] == (
        f"sampler {sampler} optimizes one objective, and objectives has 2; use tpe, nsga2 or random"
    )
    assert detail["line"] == 5


def test_pruner_needs_a_length():
    detail = error_at("searcher.pruner", *OPTUNA, "metric: loss", "pruner: {name: median}")
    assert detail["message"] == (
        "pruner median needs a training length: max_length, or max_time with time_metric"
    )
    assert (detail["line"], detail["column"]) == (6, 11)


def test_pruner_with_several_objectives():
    detail = error_at(
        "searcher.pruner",
        *OPTUNA,
        "objectives: [{metric: loss}, {metric: latency}]",
        "max_length: 100",
        "pruner: {name: successive_halving}",
    )
    assert detail["message"].startswith("pruner successive_halving needs a single objective")
    assert detail["line"] == 7


def test_unknown_pruner_field_suggests_the_nearest_name():
    detail = error_at(
        "searcher.pruner.n_warmup_step",
        *OPTUNA,
        "metric: loss",
        "max_length: 100",
        "pruner:",
        "  name: median",
        "  n_warmup_step: 3",
    )
    assert detail["message"] == "unknown field 'n_warmup_step'; did you mean 'n_warmup_steps'?"
    assert (detail["line"], detail["column"]) == (9, 5)


def test_field_of_another_pruner_is_unknown():
    detail = error_at(
        "searcher.pruner.divisor",
        *OPTUNA,
        "metric: loss",
        "max_length: 100",
        "pruner: {name: median, divisor: 3}",
    )
    assert detail["message"].startswith("unknown field 'divisor'")


def test_unknown_pruner_name():
    detail = error_at(
        "searcher.pruner.name", *OPTUNA, "metric: loss", "max_length: 100", "pruner: {name: ash}"
    )
    assert detail["message"] == (
        "unknown pruner 'ash'; expected one of none, asha, median, percentile, "
        "successive_halving, hyperband; did you mean 'asha'?"
    )


@pytest.mark.parametrize(
    ("pruner", "path", "message"),
    [
        (
            "{name: percentile}",
            "searcher.pruner.percentile",
            "required field is missing",
        ),
        (
            "{name: percentile, percentile: 101}",
            "searcher.pruner.percentile",
            "must be between 0 and 100, got 101",
        ),
        (
            "{name: hyperband, reduction_factor: 1}",
            "searcher.pruner.reduction_factor",
            "must be at least 2, got 1",
        ),
        ("{name: asha, num_rungs: 0}", "searcher.pruner.num_rungs", "must be at least 1, got 0"),
    ],
)
def test_pruner_field_values(pruner, path, message):
    detail = error_at(path, *OPTUNA, "metric: loss", "max_length: 100", f"pruner: {pruner}")
    assert detail["message"] == message


def test_unknown_objective_field():
    error = config_error(
        load_config,
        searcher_yaml(*OPTUNA, "objectives:", "  - {metric: loss}", "  - {metrc: latency}"),
    )
    detail = detail_at(error, "searcher.objectives[1].metrc")
    assert detail["message"] == "unknown field 'metrc'; did you mean 'metric'?"
    assert (detail["line"], detail["column"]) == (7, 8)
    assert detail_at(error, "searcher.objectives[1].metric")["message"] == (
        "required field is missing"
    )


def test_optuna_metric_must_match_the_first_objective():
    detail = error_at(
        "searcher.metric", *OPTUNA, "metric: accuracy", "objectives: [{metric: loss}, {metric: t}]"
    )
    assert "differs from the first objective's ('loss')" in detail["message"]
    detail = error_at(
        "searcher.smaller_is_better",
        *OPTUNA,
        "smaller_is_better: true",
        "objectives: [{metric: acc, smaller_is_better: false}, {metric: t}]",
    )
    assert "differs from the first objective's" in detail["message"]


def test_optuna_objectives_problems():
    detail = error_at("searcher.objectives", *OPTUNA, "metric: loss", "objectives: []")
    assert detail["message"] == "must not be empty"
    detail = error_at(
        "searcher.objectives[1].metric", *OPTUNA, "objectives: [{metric: loss}, {metric: loss}]"
    )
    assert detail["message"] == "metric 'loss' is already an objective"
    error = config_error(load_config, searcher_yaml(*OPTUNA))
    assert detail_at(error, "searcher.metric")["message"] == "required field is missing"


def test_truncate_fraction_above_one_half():
    lines = [*PBT[:4], "replace_function: {truncate_fraction: 0.6}", PBT[5]]
    detail = error_at(
        "searcher.replace_function.truncate_fraction", *lines, "length_per_round: {batches: 10}"
    )
    assert detail["message"] == "must be at most 0.5, got 0.6"
    assert (detail["line"], detail["column"]) == (7, 41)


def test_pbt_length_problems():
    detail = error_at("searcher.length_per_round", *PBT, "length_per_round: 500")
    assert detail["message"].startswith("give a unit, like {batches: 500}")
    detail = error_at(
        "searcher.length_per_round",
        *PBT,
        "time_metric: samples",
        "length_per_round: {batches: 500}",
    )
    assert "counts samples" in detail["message"]
    detail = error_at(
        "searcher.max_length", *PBT, "length_per_round: {batches: 5}", "max_length: 100"
    )
    assert "max_length is not used" in detail["message"]
    error = config_error(load_config, searcher_yaml(*PBT))
    assert detail_at(error, "searcher.length_per_round")["message"] == "required field is missing"


def test_stop_once_is_accepted_and_must_be_a_bool():
    assert load_searcher(*HALVING, "max_length: 100", "stop_once: true")["stop_once"] is True
    detail = error_at("searcher.stop_once", *HALVING, "max_length: 100", "stop_once: yes please")
    assert detail["message"] == "expected true or false, got 'yes please'"


def test_asha_mode_and_bracket_rungs_values():
    detail = error_at("searcher.mode", *ASHA, "max_length: 100", "mode: wild")
    assert "'aggressive', 'standard' or 'conservative'" in detail["message"]
    detail = error_at(
        "searcher.bracket_rungs[1]", *ASHA, "max_length: 100", "bracket_rungs: [2, 0]"
    )
    assert detail["message"] == "must be at least 1, got 0"


def test_unknown_searcher_lists_every_name():
    error = config_error(load_config, searcher_yaml("name: asha", "metric: loss"))
    message = detail_at(error, "searcher.name")["message"]
    assert message.startswith(
        "unknown searcher 'asha'; expected one of single, random, grid, adaptive_asha, "
        "async_halving, hyperband, pbt, optuna, adaptive, adaptive_simple, custom"
    )


def test_custom_stays_refused():
    error = config_error(load_config, searcher_yaml("name: custom", "metric: loss"))
    assert isinstance(error, NotSupportedYet)
    message = detail_at(error, "searcher.name")["message"]
    assert message.startswith("custom is not supported yet; this version runs single, random")
    assert "optuna" in message


# --- grid: a one-value categorical acts like a const --------------------------------------


def test_grid_categorical_with_one_value_counts_once():
    cfg = load_config(
        HEAD
        + "  {name: grid, metric: loss}\n"
        + "hyperparameters:\n"
        + "  opt: {type: categorical, vals: [adam]}\n"
        + "  lr: {type: double, minval: 0.1, maxval: 0.3, count: 3}\n"
    )
    assert cfg.grid_size() == 3
    assert cfg.searcher_dict()["max_trials"] == 3
    assert cfg.hyperparameter_space()["opt"] == {"type": "categorical", "vals": ["adam"]}


def test_grid_empty_categorical_names_the_path():
    error = config_error(
        load_config,
        HEAD
        + "  {name: grid, metric: loss}\n"
        + "hyperparameters:\n"
        + "  arch:\n"
        + "    act: {type: categorical, vals: []}\n",
    )
    detail = detail_at(error, "hyperparameters.arch.act.vals")
    assert "hyperparameters.arch.act has no values" in detail["message"]
    assert detail["line"] == 6


# --- docs/searchers.md --------------------------------------------------------------------

DOC = Path(__file__).resolve().parents[2] / "docs" / "searchers.md"
# Each example follows a marker: <!-- example: NAME --> then a ```yaml block.
EXAMPLES = re.findall(r"<!-- example: (\w+) -->\s*```yaml\n(.*?)```", DOC.read_text(), flags=re.S)
DOC_SEARCHERS = [
    "single",
    "random",
    "grid",
    "adaptive_asha",
    "async_halving",
    "hyperband",
    "pbt",
    "optuna",
]


def test_the_docs_have_an_example_per_searcher():
    assert {name for name, _ in EXAMPLES} == set(DOC_SEARCHERS)


@pytest.mark.parametrize(("name", "block"), EXAMPLES, ids=[n for n, _ in EXAMPLES])
def test_doc_example_loads(name, block):
    cfg = load_config(block, "searchers.md")
    assert cfg.searcher_dict()["name"] == name


@pytest.mark.parametrize(
    "section",
    [
        "{name: single, metric: loss, max_length: {batches: 10}}",
        "{name: grid, metric: loss}",
        "{name: random, metric: loss, max_trials: 4, max_time: 9, time_metric: batches}",
        "{name: adaptive_asha, metric: loss, max_trials: 16, max_length: {epochs: 64}}",
        "{name: async_halving, metric: loss, max_trials: 8, num_rungs: 2, max_length: 16}",
        "{name: hyperband, metric: loss, max_length: 81}",
        "{name: pbt, metric: loss, population_size: 4, num_rounds: 2,"
        " length_per_round: {batches: 5}, replace_function: {truncate_fraction: 0.25},"
        " explore_function: {resample_probability: 0.2, perturb_factor: 0.2}}",
        "{name: optuna, metric: loss, max_trials: 4, max_length: 40,"
        " pruner: {name: asha, num_rungs: 3}}",
        "{name: optuna, max_trials: 4, objectives: [{metric: a}, {metric: b}]}",
    ],
)
def test_the_stored_searcher_dict_validates_back_to_the_same_model(section: str) -> None:
    """What the master stores (searcher_dict) is what the searcher is rebuilt from."""
    cfg = load_config(
        "entrypoint: python3 train.py\n"
        "hyperparameters: {x: {type: int, minval: 1, maxval: 3}}\n"
        f"searcher: {section}\n"
    )
    stored = json.loads(json.dumps(cfg.searcher_dict()))
    again = searcher_from_json(stored)
    assert again.to_dict() == cfg.searcher.to_dict()
    assert again.training_length() == cfg.searcher.training_length()
