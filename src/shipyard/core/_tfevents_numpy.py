"""TensorBoard scalars a batch at a time with numpy: the same bytes as
``_tfevents.scalars_events``, for a fraction of the CPU (figures in ``_tensorboard``'s
docstring). ``_tensorboard``'s writer imports this module once numpy is imported (torch
imports it) or after NUMPY_AFTER_POINTS points; ``import shipyard.core`` never imports it.

Consecutive reports of one group with the same metric names give records that differ only
in the step's varint and in each value's four bytes. A run of them whose steps have varints
of the same length has one layout: it becomes one (rows, record length) uint8 array, filled
from a template row. CRC-32C is affine: over messages of one length, crc(row) is crc(the
template with zeros in the varying bytes) XOR each varying byte's share, which a table for
the byte's distance from the end gives. So only the varying bytes cost work per row, not
the tags and the rest of the record.
"""

from __future__ import annotations

import itertools
import struct
import threading
from typing import Any

import numpy as np

from shipyard.core import _tfevents
from shipyard.core._columns import as_columns

# A shorter run is cheaper in pure Python: each numpy call costs a few microseconds.
MIN_ROWS = 8
# A longer record goes the pure-Python way: it would need a table for each byte position
# (1 KB each: 4 MB at most).
MAX_DATA_BYTES = 4096
_STEP_AT = 10  # the step's varint in an Event: after wall_time (9 bytes) and the step's key
_LENGTH_BYTES = 12  # a TFRecord's length (8 bytes) and its masked CRC (4 bytes)
# Steps from 2**(7*i) upwards have varints of more than i bytes.
_VARINT_BOUNDS = np.array([1 << 7 * i for i in range(1, 10)], dtype=np.uint64)
# _SHARES[d][b]: the share in the CRC (with zero initial and final values) of byte b followed
# by d zero bytes. Grown on demand (writers of several contexts may run at once).
_SHARES = [np.array(_tfevents._T0, dtype=np.uint32)]
_SHARES_LOCK = threading.Lock()


def scalars_events(wall_time: float, reports: list[dict[str, Any]]) -> bytes | None:
    """The bytes of ``_tfevents.scalars_events(wall_time, reports)``; None if numpy cannot
    hold a step or a value (an int beyond uint64 or float64): the caller then takes the
    pure-Python path."""
    if len(reports) < MIN_ROWS:  # one report a delivery (a loop reporting now and then)
        return _tfevents.scalars_events(wall_time, reports)
    chunks = []
    for block in as_columns(reports):
        columns = block["metrics"]
        if not columns:  # reports without metrics have no record
            continue
        steps = block["steps"]
        tags = [f"{block['group']}/{name}" for name in columns]
        if len(steps) < MIN_ROWS:  # e.g. a validation between training reports
            chunks += _python_records(wall_time, tags, steps, columns, range(len(steps)))
            continue
        try:
            step_array = np.array(steps, dtype=np.uint64)
            value_array = np.array(list(columns.values()), dtype=np.float64)
        except (OverflowError, TypeError, ValueError):
            return None
        with np.errstate(over="ignore", invalid="ignore"):  # beyond float32: ±inf, as struct
            floats = value_array.T.astype("<f4", order="C")  # a row of values a step
        varint_lengths = 1 + np.searchsorted(_VARINT_BOUNDS, step_array, side="right")
        cuts = [0, *(np.flatnonzero(np.diff(varint_lengths)) + 1).tolist(), len(steps)]
        for start, end in itertools.pairwise(cuts):
            layout = None
            if end - start >= MIN_ROWS:
                layout = _Layout(wall_time, int(varint_lengths[start]), tags)
            if layout is not None and len(layout.data) <= MAX_DATA_BYTES:
                chunks.append(layout.records(step_array[start:end], floats[start:end]))
            else:
                chunks += _python_records(wall_time, tags, steps, columns, range(start, end))
    return b"".join(chunks)


def _python_records(
    wall_time: float,
    tags: list[str],
    steps: list[int],
    columns: dict[str, list[Any]],
    rows: range,
) -> list[bytes]:
    """The records of a block's ``rows`` the pure-Python way (too few for numpy to pay)."""
    values = list(columns.values())
    return [
        _tfevents.scalars_event(
            wall_time,
            steps[row],
            [
                (tag, _tfevents.as_float(column[row]))
                for tag, column in zip(tags, values, strict=True)
            ],
        )
        for row in rows
    ]


class _Layout:
    """The records of one group, metric names and step varint length."""

    def __init__(self, wall_time: float, step_bytes: int, tags: list[str]) -> None:
        heads = [_tfevents.value_head(tag) for tag in tags]
        summary_length = sum(len(head) + 4 for head in heads)
        # The smallest step with a varint this long; the template has zeros in its place.
        data = bytearray(_tfevents.event_head(wall_time, 1 << 7 * (step_bytes - 1), summary_length))
        data[_STEP_AT : _STEP_AT + step_bytes] = bytes(step_bytes)
        self.value_at: list[int] = []  # where each value's four bytes go in data
        for head in heads:
            data += head
            self.value_at.append(len(data))
            data += bytes(4)
        self.data = bytes(data)
        self.step_bytes = step_bytes

    def records(self, steps: np.ndarray, floats: np.ndarray) -> bytes:
        """A record for each step (uint64) and its row of values (float32)."""
        size = len(self.data)
        length = struct.pack("<Q", size)
        template = length + struct.pack("<I", _tfevents.masked_crc32c(length)) + self.data
        rows = np.empty((len(steps), len(template) + 4), np.uint8)
        rows[:, :-4] = np.frombuffer(template, np.uint8)
        crc = np.full(len(steps), _tfevents.crc32c(self.data), np.uint32)
        shares = _shares(size)

        def put(at: int, column: np.ndarray) -> None:  # the byte at data[at], for each row
            rows[:, _LENGTH_BYTES + at] = column
            crc[:] ^= shares[size - 1 - at][column]

        for i in range(self.step_bytes):  # the varint: 7 bits a byte, low first
            byte = ((steps >> np.uint64(7 * i)) & np.uint64(0x7F)).astype(np.uint8)
            put(_STEP_AT + i, byte | 0x80 if i < self.step_bytes - 1 else byte)
        value_bytes = floats.view(np.uint8)  # little-endian float32s, four bytes each
        for j, at in enumerate(self.value_at):
            for i in range(4):
                put(at + i, value_bytes[:, 4 * j + i])
        masked = ((crc >> 15) | (crc << 17)) + np.uint32(0xA282EAD8)  # as masked_crc32c
        rows[:, -4:] = masked.astype("<u4").view(np.uint8).reshape(-1, 4)
        return rows.tobytes()


def _shares(size: int) -> list[np.ndarray]:
    """_SHARES with at least ``size`` tables."""
    if len(_SHARES) < size:
        with _SHARES_LOCK:
            while len(_SHARES) < size:  # one more zero byte: what crc32c does for each byte
                last = _SHARES[-1]
                _SHARES.append(_SHARES[0][last & 0xFF] ^ (last >> 8))
    return _SHARES
