"""Determined fields Shipyard does not act on. A config may carry them when they are unset or
at Determined's defaults (so an exported config loads); any other value is refused as not
supported yet, naming the field, rather than silently ignored."""

from __future__ import annotations

from typing import Any

from shipyard.common.config._base import describe, not_supported

# Determined's defaults for each field; None means "only null or an empty value".
IGNORED_DEFAULTS: dict[str, Any] = {
    "profiling": {
        "enabled": False,
        "begin_on_batch": 0,
        "end_after_batch": None,
        "sync_timings": True,
    },
    "optimizations": {
        "aggregation_frequency": 1,
        "average_aggregated_gradients": True,
        "average_training_metrics": True,
        "gradient_compression": False,
        "grad_updates_size_file": None,
        "mixed_precision": "O0",
        "tensor_fusion_threshold": 64,
        "tensor_fusion_cycle_time": 5,
        "auto_tune_tensor_fusion": False,
    },
    "scheduling_unit": 100,
    "debug": False,
    "log_policies": None,
    "integrations": None,
    "pbs": None,
    "slurm": None,
    "internal": None,
    "security": None,
    "tensorboard_storage": None,
    "data_layer": None,
    "log_retention_days": None,
}


def _empty(value: Any) -> bool:
    return value is None or value == {} or value == []


def _first_difference(value: Any, default: Any) -> str | None:
    """The sub-path of the first setting that differs from Determined's default, "" for the
    value itself, None when it matches."""
    if _empty(value) or value == default:
        return None
    if isinstance(value, dict) and isinstance(default, dict):
        for key, sub in value.items():
            if key not in default or (sub is not None and sub != default[key]):
                return str(key)
        return None
    return ""


def _profiling_off(field: str, value: Any) -> bool:
    """Profiling off (Determined's default): its other settings do nothing in Determined
    either (its gpt_neox example keeps begin_on_batch with enabled: false)."""
    return (
        field == "profiling" and isinstance(value, dict) and value.get("enabled") in (False, None)
    )


def check_ignored(field: str, value: Any) -> Any:
    default = IGNORED_DEFAULTS[field]
    if _profiling_off(field, value):
        default = {**default, **{k: v for k, v in value.items() if k in default}}
    where = _first_difference(value, default)
    if where is None:
        return value
    name = f"{field}.{where}" if where else field
    shown = value[where] if where else value
    raise not_supported(
        f"{name} is not supported yet (got {describe(shown)}); remove it or use the default",
        subpath=where or None,
    )
