"""determined.keras: not in Shipyard yet; importing works, using a name raises."""

from .._errors import missing_module

__getattr__ = missing_module(
    "determined.keras",
    "use shipyard.integrations.keras (docs/integrations.md) or report metrics and checkpoints "
    "through det.core",
)
