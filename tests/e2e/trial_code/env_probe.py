"""Prints the environment a trial really runs in, for tests."""

import os

import shipyard.core

with shipyard.core.init() as ctx:
    print(f"CUDA_VISIBLE_DEVICES={os.environ.get('CUDA_VISIBLE_DEVICES', '')}")
    print(f"SHIPYARD_SLOT_IDS={os.environ.get('SHIPYARD_SLOT_IDS', '')}")
    print(f"GREETING={os.environ.get('GREETING', '')}")
    ctx.train.report_validation_metrics(1, {"val_loss": 1.0})
