"""det.transformers.DetCallback: Shipyard's Hugging Face callback
(shipyard.integrations.huggingface.ShipyardCallback) under Determined's name and arguments.

As Determined's does, it copies the trial's latest checkpoint into ``args.output_dir`` when
it is made and points ``args.resume_from_checkpoint`` at it, so the script resumes with
``trainer.train(resume_from_checkpoint=args.resume_from_checkpoint)``.
"""

from __future__ import annotations

from typing import Any

from shipyard.integrations.huggingface import ShipyardCallback, download_latest_checkpoint

from .._errors import not_supported
from .._info import get_cluster_info

# What the searcher reads, never filtered out.
_ALWAYS = ("batches",)


class DetCallback(ShipyardCallback):
    def __init__(
        self,
        core_context: Any,
        args: Any,
        filter_metrics: list[str] | None = None,
        user_data: dict[str, Any] | None = None,
    ) -> None:
        if user_data is not None:
            raise not_supported("DetCallback(user_data=...)", "save it in the output_dir yourself")
        inner = getattr(core_context, "_shipyard", None)
        if inner is None:
            raise TypeError(
                "DetCallback(core_context, args) takes the context of det.core.init(), got "
                f"{type(core_context).__name__}"
            )
        if get_cluster_info() is None:
            raise RuntimeError("det.transformers.DetCallback must be run in a Shipyard trial")
        super().__init__(inner)
        self._keep = None
        if filter_metrics is not None:
            searcher = inner.searcher
            extra = [searcher.metric, searcher.time_metric, *_ALWAYS]
            self._keep = {*filter_metrics, *(name for name in extra if name)}
        if not getattr(args, "overwrite_output_dir", False):
            path = download_latest_checkpoint(inner, args.output_dir)
            if path is not None:
                args.resume_from_checkpoint = path

    def _filtered(self, values: dict[str, Any] | None) -> dict[str, Any] | None:
        if values is None or self._keep is None:
            return values
        return {k: v for k, v in values.items() if k in self._keep or k.endswith("_runtime")}

    def on_log(self, args: Any, state: Any, control: Any, logs: Any = None, **kwargs: Any) -> None:
        super().on_log(args, state, control, logs=self._filtered(logs), **kwargs)

    def on_evaluate(
        self, args: Any, state: Any, control: Any, metrics: Any = None, **kwargs: Any
    ) -> None:
        super().on_evaluate(args, state, control, metrics=self._filtered(metrics), **kwargs)
