"""``model_def:MyTrial``: the user's trial class, found in the trial's working directory
(its code), and refused clearly when it is an API Shipyard does not run."""

from __future__ import annotations

import importlib
import os
import sys

from shipyard.common.config.entrypoint import TRIAL_CLASS
from shipyard.common.errors import NotSupportedYet

# Determined's other Trial APIs: recognised by name, so neither framework need be installed.
_REFUSED = {
    "TFKerasTrial": "port it to Keras's own fit() with shipyard.integrations.keras",
    "DeepSpeedTrial": "port it to a Core API script (det.core) started by the launcher",
}


def load_trial_class(spec: str) -> type:
    if TRIAL_CLASS.match(spec.strip()) is None:
        raise ValueError(f"expected MODULE:CLASS like model_def:MyTrial, got {spec!r}")
    module_name, class_name = spec.strip().split(":")
    here = os.getcwd()
    if here not in sys.path:
        sys.path.insert(0, here)  # the context's modules, as `python3 script.py` would see them
    module = importlib.import_module(module_name)
    try:
        cls = getattr(module, class_name)
    except AttributeError:
        raise ValueError(f"module {module_name!r} has no class {class_name!r}") from None
    if not isinstance(cls, type):
        raise TypeError(f"{spec} is a {type(cls).__name__}, not a class")
    for base in cls.__mro__:
        if base.__name__ in _REFUSED:
            raise NotSupportedYet(
                f"{spec} is a {base.__name__}: Shipyard runs Determined's PyTorchTrial only; "
                f"{_REFUSED[base.__name__]}"
            )
    if not any(base.__name__ == "PyTorchTrial" for base in cls.__mro__):
        raise TypeError(
            f"{spec} must subclass determined.pytorch.PyTorchTrial (its bases: "
            f"{[b.__name__ for b in cls.__mro__[1:]]})"
        )
    return cls
