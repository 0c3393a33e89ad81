"""determined.experimental (Determined's client SDK): not in Shipyard's shim; importing
works, using a name raises."""

from .._errors import missing_module

__getattr__ = missing_module(
    "determined.experimental", "use Shipyard's Python SDK, shipyard.client"
)
