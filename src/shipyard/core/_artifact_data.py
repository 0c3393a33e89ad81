"""What ctx.artifacts makes of its arguments, on the calling thread: a file's kind and media
type (checked against its bytes), an image's encoded bytes, a table's JSON-safe cells."""

from __future__ import annotations

import io
import json
import math
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from shipyard.common import artifact_rules as rules


def check_name(name: Any) -> None:
    refusal = rules.name_refusal(name)
    if refusal is not None:
        raise (ValueError if isinstance(name, str) else TypeError)(refusal)


def check_steps(steps: Any) -> None:
    refusal = rules.steps_refusal(steps)
    if refusal is not None:
        is_int = isinstance(steps, int) and not isinstance(steps, bool)
        raise (ValueError if is_int else TypeError)(refusal)


def file_kind(name: str, data: bytes, kind: str | None) -> tuple[str, str]:
    """(kind, media type) of a logged file, checked against its content."""
    image = rules.image_type(data[:12])
    if kind is None:
        kind = "image" if image else "file"
    if kind == "image":
        if image is None:
            raise ValueError(
                f"artifact {name!r} is not a PNG, JPEG, GIF or WebP image (by its first bytes)"
            )
        return kind, image
    if kind == "text":
        _utf8(name, data)
        return kind, rules.TEXT_TYPE
    if kind == "table":
        suffix = os.path.splitext(name)[1].lower()
        if suffix == ".csv":
            _utf8(name, data)
            return kind, "text/csv"
        if suffix == ".json":
            try:
                json.loads(data)
            except ValueError as exc:
                raise ValueError(f"artifact {name!r} is not JSON: {exc}") from None
            return kind, "application/json"
        raise ValueError(
            f"a table artifact must be a .csv or .json file, got {name!r} "
            "(or log rows with ctx.artifacts.log_table)"
        )
    import mimetypes

    guessed = mimetypes.guess_type(name)[0]
    if guessed is None or rules.media_type_refusal("file", guessed) is not None:
        guessed = "application/octet-stream"
    return "file", guessed


def _utf8(name: str, data: bytes) -> None:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"artifact {name!r} is not UTF-8 text: {exc}") from None


def image_bytes(image: Any, name: str, check_size: Callable[[str, int], None]) -> bytes:
    """The encoded bytes of what log_image was given."""
    if isinstance(image, bytes | bytearray | memoryview):
        return bytes(image)
    if isinstance(image, str | os.PathLike):
        path = Path(image)
        check_size(name, path.stat().st_size)  # before reading gigabytes
        return path.read_bytes()
    if hasattr(image, "__array_interface__") and not hasattr(image, "save"):
        image = _from_array(image, name)
    if hasattr(image, "save") and hasattr(image, "mode"):  # a PIL image
        out = io.BytesIO()
        image.save(out, format="PNG")
        return out.getvalue()
    raise TypeError(
        f"artifact {name!r}: log_image takes PNG, JPEG, GIF or WebP bytes, a file's path, "
        f"or (with Pillow) a PIL image or a uint8 numpy array; got {type(image).__name__}"
    )


def _from_array(array: Any, name: str) -> Any:
    try:
        from PIL import Image  # optional: only an array needs it
    except ImportError:
        raise TypeError(
            f"artifact {name!r}: logging a numpy array needs Pillow (pip install pillow); "
            "or pass PNG bytes"
        ) from None
    if str(getattr(array, "dtype", "")) != "uint8":
        raise TypeError(
            f"artifact {name!r}: an image array must be uint8 (0-255), "
            f"got {getattr(array, 'dtype', type(array).__name__)}"
        )
    return Image.fromarray(array)


def table_cells(
    name: str, rows: Any, columns: Sequence[str] | None
) -> tuple[list[str], list[list[Any]]]:
    """(columns, rows of cells) of what log_table was given, every cell JSON-safe."""
    if hasattr(rows, "to_dict") and hasattr(rows, "columns"):  # a pandas DataFrame
        split = rows.to_dict(orient="split")
        columns = [str(c) for c in split["columns"]] if columns is None else columns
        rows = split["data"]
    if isinstance(rows, Mapping | str | bytes) or not isinstance(rows, Iterable):
        raise TypeError(
            f"artifact {name!r}: rows must be a list of dicts, or of lists with columns=, "
            f"got {type(rows).__name__}"
        )
    rows = list(rows)
    if columns is None:
        if not all(isinstance(row, Mapping) for row in rows):
            raise TypeError(f"artifact {name!r}: rows that are not dicts need columns=[...]")
        columns = list(dict.fromkeys(str(key) for row in rows for key in row))
    names = [str(column) for column in columns]
    cells = []
    for number, row in enumerate(rows):
        if isinstance(row, Mapping):
            values = [row.get(column) for column in columns]
        elif isinstance(row, str | bytes) or not isinstance(row, Iterable):
            raise TypeError(f"artifact {name!r}: row {number} must be a dict or a list")
        else:
            values = list(row)
            if len(values) != len(names):
                raise ValueError(
                    f"artifact {name!r}: row {number} has {len(values)} cells for "
                    f"{len(names)} columns"
                )
        cells.append([_cell(value) for value in values])
    return names, cells


def _cell(value: Any) -> Any:
    """A table cell as JSON can hold it (NaN and infinities as text, numpy scalars plain)."""
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if hasattr(value, "item") and callable(value.item):
        try:
            return _cell(value.item())
        except (TypeError, ValueError):
            pass
    return str(value)
