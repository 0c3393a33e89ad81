"""The `environment` and `bind_mounts` sections."""

from __future__ import annotations

import posixpath
from typing import Annotated, Any

from pydantic import BeforeValidator, Field, field_validator, model_validator

from shipyard.common.config._base import StrictModel, describe, invalid, not_supported

# Determined's per-device form: {cpu: [...], cuda: [...], rocm: [...]} ("gpu" is cuda's old name).
DEVICE_KEYS = ("cpu", "cuda", "gpu", "rocm")
# Merged in this order, later wins: a trial here runs on CPU or CUDA, not ROCm (yet).
MERGED_DEVICE_KEYS = ("cpu", "gpu", "cuda")


def _env_value(value: Any, key: str) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (str, int, float)):
        return str(value)
    raise invalid(f"expected a string or number, got {describe(value)}", subpath=key)


def _pairs(items: Any, where: str | None) -> dict[str, str]:
    """["K=V", ...] -> {"K": "V"}."""
    if not isinstance(items, list):
        raise invalid(f'expected a list of "NAME=value" strings, got {describe(items)}', where)
    out: dict[str, str] = {}
    for i, item in enumerate(items):
        sub = f"{where}[{i}]" if where else f"[{i}]"
        if not isinstance(item, str) or "=" not in item or item.startswith("="):
            raise invalid(f'expected "NAME=value", got {describe(item)}', sub)
        key, _, value = item.partition("=")
        out[key] = value
    return out


def _is_per_device(raw: dict) -> bool:
    return bool(raw) and all(k in DEVICE_KEYS and isinstance(v, list) for k, v in raw.items())


def parse_env_vars(raw: Any) -> dict[str, str]:
    """Every accepted form of environment_variables, as one {name: value} map."""
    if raw is None:
        return {}
    if isinstance(raw, list):
        return _pairs(raw, None)
    if not isinstance(raw, dict):
        raise invalid(f'expected a list of "NAME=value" strings or a map, got {describe(raw)}')
    if _is_per_device(raw):
        merged: dict[str, str] = {}
        for device in MERGED_DEVICE_KEYS:
            merged.update(_pairs(raw.get(device, []), device))
        return merged
    return {str(k): _env_value(v, str(k)) for k, v in raw.items()}


class DeviceImages(StrictModel):
    cpu: str | None = None
    cuda: str | None = None
    gpu: str | None = None
    rocm: str | None = None


class EnvironmentConfig(StrictModel):
    environment_variables: Annotated[dict[str, str], BeforeValidator(parse_env_vars)] = Field(
        default_factory=dict
    )
    # Recorded, and used by container backends; the local backend runs without an image.
    image: str | DeviceImages | None = None
    # Pull the image before every run (Determined's option); else a run uses the local copy.
    force_pull_image: bool = False
    registry_auth: dict[str, Any] | None = None
    pod_spec: dict[str, Any] | None = None
    add_capabilities: list[str] = Field(default_factory=list)
    drop_capabilities: list[str] = Field(default_factory=list)
    proxy_ports: list[dict[str, Any]] = Field(default_factory=list)

    @field_validator("image", mode="before")
    @classmethod
    def _image_form(cls, value: Any) -> Any:
        if value is not None and not isinstance(value, (str, dict, DeviceImages)):
            raise invalid(
                f"expected an image name or a map {{cpu, cuda, rocm}}, got {describe(value)}"
            )
        return value

    @model_validator(mode="after")
    def _pull_needs_image(self) -> EnvironmentConfig:
        # Determined pulls its default image; Shipyard has none: a trial without an image
        # runs as a process on the node, and there is nothing to pull.
        if self.force_pull_image and self.image is None:
            raise invalid(
                "force_pull_image pulls environment.image before every run, and no image is "
                "set: set environment.image, or remove force_pull_image",
                subpath="force_pull_image",
            )
        return self

    @field_validator(
        "registry_auth", "pod_spec", "add_capabilities", "drop_capabilities", "proxy_ports"
    )
    @classmethod
    def _unset(cls, value: Any) -> Any:
        if value:
            raise not_supported("this setting is not supported yet; remove it")
        return value


def _absolute(value: str) -> str:
    if not posixpath.isabs(value):
        raise invalid(f"must be an absolute path, got {value!r}")
    return value


class BindMount(StrictModel):
    host_path: str
    container_path: str = Field(min_length=1)
    read_only: bool = False
    propagation: str = "rprivate"

    _check_host_path = field_validator("host_path")(_absolute)
