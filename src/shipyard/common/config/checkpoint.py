"""The `checkpoint_storage` section: where checkpoints go and how many are kept."""

from __future__ import annotations

import posixpath
from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, Field, Tag, field_validator, model_validator

from shipyard.common.config._base import (
    StrictModel,
    describe,
    invalid,
    not_supported,
    tag_discriminator,
)
from shipyard.common.config.secrets import _check_name

STORAGE_TYPES = ("shared_fs", "directory", "s3", "gcs", "azure")


class Retention(StrictModel):
    """Determined's retention: best N of the experiment and of each trial, latest N of each
    trial. Every storage type has it; with no checkpoint_storage, these defaults apply."""

    save_experiment_best: int = Field(default=0, ge=0)
    save_trial_best: int = Field(default=1, ge=0)
    save_trial_latest: int = Field(default=1, ge=0)


def _absolute(value: str) -> str:
    if not posixpath.isabs(value):
        raise invalid(f"must be an absolute path, got {value!r}")
    return posixpath.normpath(value)


class SharedFsStorage(Retention):
    type: Literal["shared_fs"]
    host_path: str
    storage_path: str | None = None
    propagation: str = "rprivate"
    container_path: str | None = None

    _check_host_path = field_validator("host_path")(_absolute)

    @model_validator(mode="after")
    def _storage_path_inside(self) -> SharedFsStorage:
        if self.storage_path is None:
            return self
        full = posixpath.normpath(posixpath.join(self.host_path, self.storage_path))
        if full != self.host_path and not full.startswith(self.host_path.rstrip("/") + "/"):
            raise invalid(
                f"storage_path {self.storage_path!r} is outside host_path {self.host_path!r}",
                subpath="storage_path",
            )
        return self

    def base_path(self) -> str:
        return posixpath.normpath(posixpath.join(self.host_path, self.storage_path or ""))


class DirectoryStorage(Retention):
    type: Literal["directory"]
    container_path: str

    _check_container_path = field_validator("container_path")(_absolute)

    def base_path(self) -> str:
        return self.container_path


class SecretRef(StrictModel):
    """`{secret: NAME}`: the value of the experiment's workspace's secret NAME. The master
    opens it where it is needed (at submit, for each run, for retention and downloads),
    so the stored config holds the name only."""

    secret: str


def _key_form(raw: Any) -> Any:
    if raw is None or isinstance(raw, str | SecretRef):
        return raw
    if isinstance(raw, dict) and list(raw) == ["secret"]:
        if not isinstance(raw["secret"], str):
            raise invalid(f"expected a secret's name, got {describe(raw['secret'])}", "secret")
        _check_name(raw["secret"], "the secret name", "secret")
        return raw
    raise invalid(f"expected a string or {{secret: NAME}}, got {describe(raw)}")


Key = Annotated[str | SecretRef | None, BeforeValidator(_key_form)]
KEY_FIELDS = ("access_key", "secret_key")


class S3Storage(Retention):
    """Determined's fields. Credentials left out come from the environment (the master's
    for retention and downloads, the trial's for writing: AWS_* variables, possibly from
    the experiment's `secrets:`, or ~/.aws). Each key is a string, or `{secret: NAME}` (a
    workspace secret); a literal secret_key never appears in an API answer."""

    type: Literal["s3"]
    bucket: str = Field(min_length=3, max_length=63)
    prefix: str | None = None
    endpoint_url: str | None = None
    region: str | None = None
    access_key: Key = None
    secret_key: Key = None

    @field_validator("endpoint_url")
    @classmethod
    def _http_url(cls, value: str | None) -> str | None:
        if value is not None and not value.startswith(("http://", "https://")):
            raise invalid(f"must be an http:// or https:// URL, got {value!r}")
        return value

    @field_validator("prefix")
    @classmethod
    def _relative_prefix(cls, value: str | None) -> str | None:
        if value is not None and ".." in value.split("/"):
            raise invalid(f"must not contain '..', got {value!r}")
        return value.strip("/") if value is not None else None

    @model_validator(mode="after")
    def _keys_in_pairs(self) -> S3Storage:
        if (self.access_key is None) != (self.secret_key is None):
            missing = "secret_key" if self.secret_key is None else "access_key"
            raise invalid("access_key and secret_key go together", subpath=missing)
        return self

    def base_path(self) -> str:
        """Where it is, for messages and listings: s3://bucket/prefix."""
        return "s3://" + "/".join(p for p in (self.bucket, self.prefix) if p)

    def secret_names(self) -> dict[str, str]:
        """{field: secret name} of the keys given as `{secret: NAME}`."""
        return {
            field: key.secret
            for field in KEY_FIELDS
            if isinstance(key := getattr(self, field), SecretRef)
        }

    def spec(self, secrets: Mapping[str, str] | None = None) -> dict[str, str]:
        """What storage.storage_from_spec opens (credentials included): `secrets` holds the
        values of the secrets the keys name (secret_names)."""
        spec = {"type": "s3"}
        for name in ("bucket", "prefix", "endpoint_url", "region", *KEY_FIELDS):
            value = getattr(self, name)
            if isinstance(value, SecretRef):
                value = (secrets or {})[value.secret]
            if value is not None:
                spec[name] = value
        return spec


class _CloudStorage(Retention):
    """Parsed so the error is about support, not about unknown fields; then refused."""

    prefix: str | None = None

    @model_validator(mode="after")
    def _refuse(self) -> _CloudStorage:
        raise not_supported(
            f"checkpoint storage type {self.type} is not supported yet; "  # type: ignore[attr-defined]
            "use s3 with the provider's S3-compatible endpoint (endpoint_url), or shared_fs",
            subpath="type",
        )


class GcsStorage(_CloudStorage):
    type: Literal["gcs"]
    bucket: str


class AzureStorage(_CloudStorage):
    type: Literal["azure"]
    container: str
    connection_string: str | None = None
    account_url: str | None = None
    credential: str | None = None


RETENTION_FIELDS = tuple(Retention.model_fields)


class DefaultStorage(Retention):
    """Determined's partial form: `checkpoint_storage` without `type`, only retention
    numbers. It stands for the master's default storage with these numbers; the master
    stores the merged storage (ExperimentConfig.with_default_storage)."""

    @model_validator(mode="before")
    @classmethod
    def _only_retention(cls, data: Any) -> Any:
        if isinstance(data, dict):
            data = {k: v for k, v in data.items() if not (k == "type" and v is None)}
            for key in data:
                if key not in RETENTION_FIELDS:
                    raise invalid(
                        f"without 'type', checkpoint_storage takes only "
                        f"{', '.join(RETENTION_FIELDS)} (merged with the master's default "
                        f"storage); got {key!r}: give 'type' ({', '.join(STORAGE_TYPES)}) "
                        "to choose the storage",
                        subpath=str(key),
                    )
        return data


def _storage_type(raw: Any) -> str | None:
    if isinstance(raw, dict) and raw.get("type") is None or isinstance(raw, DefaultStorage):
        return "default"  # no type (`type:` with nothing after it means no type too)
    kind = raw.get("type") if isinstance(raw, dict) else getattr(raw, "type", None)
    return kind if kind in STORAGE_TYPES else None


CheckpointStorage = Annotated[
    Annotated[DefaultStorage, Tag("default")]
    | Annotated[SharedFsStorage, Tag("shared_fs")]
    | Annotated[DirectoryStorage, Tag("directory")]
    | Annotated[S3Storage, Tag("s3")]
    | Annotated[GcsStorage, Tag("gcs")]
    | Annotated[AzureStorage, Tag("azure")],
    tag_discriminator("unknown checkpoint storage type", "type", STORAGE_TYPES, _storage_type),
]
