"""Optuna's samplers and pruners for a config; a sampler is seeded from (seed, trial number)."""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING

from shipyard.common.config.searcher import OptunaSearcher as OptunaConfig
from shipyard.common.config.searcher.optuna import (
    HyperbandPruner,
    MedianPruner,
    PercentilePruner,
    SuccessiveHalvingPruner,
)
from shipyard.search.optuna.extras import quiet

if TYPE_CHECKING:
    import optuna


def sampler_seed(seed: int, number: int) -> int:
    """The seed of the sampler that asks trial `number`: from (seed, number) alone."""
    digest = hashlib.sha256(f"shipyard/optuna/{seed}/{number}".encode()).digest()
    return int.from_bytes(digest[:4], "big") & 0x7FFFFFFF


def make_sampler(config: OptunaConfig, seed: int) -> optuna.samplers.BaseSampler:
    from optuna import samplers

    with quiet():
        if config.sampler == "tpe":
            return samplers.TPESampler(seed=seed)
        if config.sampler == "cmaes":
            return samplers.CmaEsSampler(seed=seed, warn_independent_sampling=False)
        if config.sampler == "gp":
            return samplers.GPSampler(seed=seed, warn_independent_sampling=False)
        if config.sampler == "nsga2":
            population = max(2, min(50, config.max_trials // 5))
            return samplers.NSGAIISampler(seed=seed, population_size=population)
        return samplers.RandomSampler(seed=seed)


def make_pruner(config: OptunaConfig) -> optuna.pruners.BasePruner:
    from optuna import pruners

    p = config.pruner
    if isinstance(p, MedianPruner):
        return pruners.MedianPruner(
            n_startup_trials=p.n_startup_trials, n_warmup_steps=p.n_warmup_steps
        )
    if isinstance(p, PercentilePruner):
        return pruners.PercentilePruner(
            p.percentile, n_startup_trials=p.n_startup_trials, n_warmup_steps=p.n_warmup_steps
        )
    if isinstance(p, SuccessiveHalvingPruner):
        return pruners.SuccessiveHalvingPruner(
            min_resource=p.min_resource, reduction_factor=p.reduction_factor
        )
    if isinstance(p, HyperbandPruner):
        length = config.training_length()
        assert length is not None  # a pruner needs a length: the config model checked it
        return pruners.HyperbandPruner(
            min_resource=p.min_resource,
            max_resource=length,
            reduction_factor=p.reduction_factor,
        )
    return pruners.NopPruner()  # none, and asha (decided by asha.AshaBracket)
