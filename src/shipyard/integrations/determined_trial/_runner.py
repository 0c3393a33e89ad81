"""Train the user's PyTorchTrial with the Trainer, as the experiment config says."""

from __future__ import annotations

import logging
import random
from typing import Any

import torch

import shipyard.core
from shipyard.integrations.determined_trial._adapter import DeterminedTrial
from shipyard.integrations.determined_trial._lengths import plan
from shipyard.integrations.determined_trial._load import load_trial_class
from shipyard.integrations.torch import Batches, Trainer

log = logging.getLogger("shipyard.determined_trial")


def global_batch_size(hparams: dict[str, Any]) -> int | None:
    value = hparams.get("global_batch_size")
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"hyperparameters.global_batch_size must be a positive int, got {value!r}")
    return value


def _seed(seed: int) -> None:
    """As Determined's harness: every process seeds from the trial's seed before the trial
    is built (a resumed run then takes the checkpoint's random states)."""
    random.seed(seed)
    torch.manual_seed(seed)
    try:
        import numpy as np
    except ImportError:
        return
    np.random.seed(seed % 2**32)


def run_trial(spec: str, *, report_period: int = 100) -> Trainer:
    """Load ``spec`` (MODULE:CLASS), then train it to the searcher's length. Training
    metrics are reported every ``report_period`` batches (Determined's scheduling_unit)."""
    trial_class = load_trial_class(spec)
    with shipyard.core.init() as ctx:
        config = ctx.info.experiment_config
        _seed(int(ctx.info.trial_seed or 0))
        gbs = global_batch_size(ctx.info.hparams)
        lengths = plan(config, gbs)
        trial = DeterminedTrial(ctx, trial_class, global_batch_size=gbs, experiment_config=config)
        trainer = Trainer(trial, ctx)
        trainer.fit(
            validation_period=lengths.validation_period,
            checkpoint_period=lengths.checkpoint_period,
            report_period=Batches(report_period),
            initial_validation=lengths.initial_validation,
            searcher_unit=lengths.searcher_unit,
            progress_metrics=lengths.time_metrics,
        )
        log.info("%s: %s after %d batches", spec, trainer.outcome, trainer.steps_completed)
        return trainer
