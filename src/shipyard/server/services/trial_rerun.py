"""`trial rerun`: a one-trial experiment that runs a trial again, with its experiment's code
snapshot and config, the trial's hyperparameters as constants, and the trial's own seed
(experiments.trial_seed), so a deterministic training reports the same metrics."""

from __future__ import annotations

from typing import Any

from shipyard.common import api
from shipyard.common.config.overrides import overridden_text, parse_mapping
from shipyard.server import orm

# The searcher fields a single search keeps from the original's (its length and metric).
KEPT_SEARCHER_FIELDS = ("metric", "smaller_is_better", "max_length", "time_metric", "max_time")


def rerun_request(
    trial: orm.Trial, exp: orm.Experiment, *, paused: bool = False
) -> api.CreateExperimentRequest:
    where = f"experiment {exp.id}'s config"
    written = parse_mapping(exp.config_yaml, where)
    searcher = written.get("searcher") or {}
    single: dict[str, Any] = {"name": "single"}
    single.update({k: searcher[k] for k in KEPT_SEARCHER_FIELDS if k in searcher})
    overrides = {
        "name": f"{exp.name} (rerun of trial {trial.id})",
        "hyperparameters": _constants(trial.hparams),
        "searcher": single,
        "reproducibility.experiment_seed": exp.seed,
    }
    return api.CreateExperimentRequest(
        config_yaml=overridden_text(exp.config_yaml, where, overrides),
        context_id=exp.context_id,
        config_file=where,
        owner=None,
        paused=paused,
        code=exp.code,
    )


def _constants(hparams: dict[str, Any]) -> dict[str, Any]:
    """Each value as a const (a nested section stays a section), so a list or a mapping
    that is a value is not read as a search space."""
    return {
        name: _constants(value) if isinstance(value, dict) else {"type": "const", "val": value}
        for name, value in hparams.items()
    }
