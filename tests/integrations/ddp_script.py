"""Run under torchrun by test_torch_trainer.py: the digits Trial trained by the Trainer on
every rank; rank 0 saves the final parameters and validation to $TRAINER_OUT."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository: tests.*

import shipyard.core  # noqa: E402
from shipyard.integrations.torch import Epochs, Trainer  # noqa: E402
from tests.integrations.digits_trial import trial_class  # noqa: E402

torch.set_num_threads(1)
torch.manual_seed(0)
with shipyard.core.init() as ctx:
    trainer = Trainer(trial_class()(ctx), ctx)
    trainer.fit(max_length=Epochs(2), report_period=Epochs(1))
    if int(os.environ["RANK"]) == 0:
        assert trainer.model is not None
        torch.save(
            {"params": trainer.model.state_dict(), "validation": trainer.last_validation},
            os.environ["TRAINER_OUT"],
        )
