"""Building blocks shared by the config sections: the strict base model, the two kinds of
problem a validator can raise, and Determined's length form (`{batches: N}` or a bare int)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, ClassVar

from pydantic import BaseModel, BeforeValidator, ConfigDict, Discriminator, model_validator
from pydantic_core import PydanticCustomError

# Error types our validators raise; problems.py turns them into readable messages.
INVALID = "shipyard_invalid"
NOT_SUPPORTED = "shipyard_not_supported_yet"
BAD_TAG = "shipyard_bad_tag"
# For each union keyed by a field ("type", "name"): what it is called -> (key, valid values).
TAGGED_UNIONS: dict[str, tuple[str, tuple[str, ...]]] = {}

LENGTH_UNITS = ("batches", "records", "epochs")


class StrictModel(BaseModel):
    """YAML already gives typed values, so no coercion ("10" is not 10) and no unknown keys."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)
    # YAML `key:` with nothing after it means "the default", as in Determined.
    keep_nulls: ClassVar[bool] = False

    @model_validator(mode="before")
    @classmethod
    def _null_means_default(cls, data: Any) -> Any:
        if isinstance(data, dict) and not cls.keep_nulls:
            return {k: v for k, v in data.items() if v is not None or k not in cls.model_fields}
        return data


def invalid(message: str, subpath: str | None = None) -> PydanticCustomError:
    """A problem found by our own check; `subpath` points below the validated value."""
    return PydanticCustomError(INVALID, "{message}", {"message": message, "subpath": subpath})


def not_supported(message: str, subpath: str | None = None) -> PydanticCustomError:
    """A valid Determined setting that Shipyard does not act on yet."""
    return PydanticCustomError(NOT_SUPPORTED, "{message}", {"message": message, "subpath": subpath})


def describe(value: Any) -> str:
    """How a bad value is shown in a message: strings quoted, containers named."""
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    if value is None:
        return "nothing (null)"
    if isinstance(value, bool):
        return "true" if value else "false"
    return repr(value)


def is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


class Length(StrictModel):
    """A training length: `value` units of `unit` (None when given as a bare integer)."""

    value: int
    unit: str | None = None

    def to_json(self) -> int | dict[str, int]:
        return self.value if self.unit is None else {self.unit: self.value}


def _parse_length(raw: Any, *, bare_int_ok: bool, minimum: int) -> Any:
    example = "{batches: 100}"
    if isinstance(raw, Length):
        return raw
    if is_int(raw) and bare_int_ok:
        if raw < minimum:
            raise invalid(f"must be at least {minimum}, got {raw}")
        return {"value": raw}
    if not isinstance(raw, dict):
        expected = f"an integer or a map like {example}" if bare_int_ok else f"a map like {example}"
        raise invalid(f"expected {expected}, got {describe(raw)}")
    unknown = [k for k in raw if k not in LENGTH_UNITS]
    if unknown:
        raise invalid(
            f"unknown unit {unknown[0]!r}; expected one of {', '.join(LENGTH_UNITS)}",
            subpath=str(unknown[0]),
        )
    if len(raw) != 1:
        raise invalid(f"give exactly one of {', '.join(LENGTH_UNITS)}, like {example}")
    ((unit, value),) = raw.items()
    if not is_int(value):
        raise invalid(f"expected an integer, got {describe(value)}", subpath=unit)
    if value < minimum:
        raise invalid(f"must be at least {minimum}, got {value}", subpath=unit)
    return {"value": value, "unit": unit}


# max_length: a bare int or {batches: N}; periods: only the map form, as in Determined.
SearcherLength = Annotated[
    Length, BeforeValidator(lambda v: _parse_length(v, bare_int_ok=True, minimum=1))
]
Period = Annotated[
    Length, BeforeValidator(lambda v: _parse_length(v, bare_int_ok=False, minimum=0))
]


def tag_discriminator(
    what: str, key: str, choices: tuple[str, ...], pick: Callable[[Any], str | None]
) -> Discriminator:
    """A discriminator whose error names `what`, the key and the valid values (problems.py).
    The context lives in TAGGED_UNIONS: a dict in the Discriminator would make it unhashable,
    which breaks `X | None`."""
    TAGGED_UNIONS[what] = (key, choices)
    return Discriminator(pick, custom_error_type=BAD_TAG, custom_error_message=what)
