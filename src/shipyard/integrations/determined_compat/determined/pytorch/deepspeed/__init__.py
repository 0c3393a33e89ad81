"""determined.pytorch.deepspeed: DeepSpeedTrial is not run by Shipyard; importing works,
using a name raises."""

from ..._errors import missing_module

__getattr__ = missing_module(
    "determined.pytorch.deepspeed",
    "port the DeepSpeedTrial to a Core API script (det.core) started by "
    "determined.launch.deepspeed, or to a PyTorchTrial",
)
