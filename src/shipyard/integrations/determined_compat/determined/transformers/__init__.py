"""det.transformers: Determined's Hugging Face callback on Shipyard's (needs transformers)."""

from ._callback import DetCallback

__all__ = ["DetCallback"]
