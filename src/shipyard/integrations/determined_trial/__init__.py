"""Determined's PyTorchTrial API on Shipyard's Trainer: ``entrypoint: model_def:MyTrial``.

The user's ``det.pytorch.PyTorchTrial`` subclass runs unchanged: ``run`` (the trial's
command) loads it, and the Trainer's manual-optimization mode drives it through
``shipyard.core`` (docs/trainer.md, "Determined's PyTorchTrial"). ``determined.pytorch``
in the compatibility package re-exports the names here.
"""
