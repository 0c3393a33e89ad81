"""TensorBoard event files, written by hand: standard library only (no protobuf, no
tensorboard in the trial process).

An event file is a sequence of TFRecords, each::

    uint64 length (little endian) | uint32 masked CRC32C of the length bytes
    data (length bytes)           | uint32 masked CRC32C of the data

whose data is one ``tensorflow.Event`` protobuf. The first record says the format
(``file_version: "brain.Event:2"``); each further one holds scalars::

    Event   { double wall_time = 1; int64 step = 2; string file_version = 3; Summary summary = 5 }
    Summary { repeated Value value = 1 }
    Value   { string tag = 1; float simple_value = 2 }

TensorBoard's readers (the Python one and the Rust data server) check both CRCs.
"""

from __future__ import annotations

import math
import struct
from typing import Any

FILE_VERSION = b"brain.Event:2"

# A tag is encoded once: its Value's head (value_head).
_tag_cache: dict[str, bytes] = {}
_TAG_CACHE_MAX = 10_000


def _crc32c_tables() -> list[list[int]]:
    """Slicing-by-8: table k gives the CRC of a byte followed by k zero bytes."""
    first = []
    for byte in range(256):
        crc = byte
        for _ in range(8):
            crc = (crc >> 1) ^ 0x82F63B78 if crc & 1 else crc >> 1  # Castagnoli, reflected
        first.append(crc)
    tables = [first]
    for _ in range(7):
        tables.append([first[crc & 0xFF] ^ (crc >> 8) for crc in tables[-1]])
    return tables


_T0, _T1, _T2, _T3, _T4, _T5, _T6, _T7 = _crc32c_tables()


def crc32c(data: bytes) -> int:
    """CRC-32C (Castagnoli) of ``data``, eight bytes a step: about 1.6 times as fast as a
    byte a step in pure Python (see tests/core/test_tfevents.py for the figure)."""
    t0, t1, t2, t3, t4, t5, t6, t7 = _T0, _T1, _T2, _T3, _T4, _T5, _T6, _T7
    crc = 0xFFFFFFFF
    whole = len(data) & ~7
    for low, high in struct.iter_unpack("<II", data[:whole]):
        crc ^= low
        crc = (
            t7[crc & 0xFF]
            ^ t6[(crc >> 8) & 0xFF]
            ^ t5[(crc >> 16) & 0xFF]
            ^ t4[crc >> 24]
            ^ t3[high & 0xFF]
            ^ t2[(high >> 8) & 0xFF]
            ^ t1[(high >> 16) & 0xFF]
            ^ t0[high >> 24]
        )
    for byte in data[whole:]:
        crc = t0[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def masked_crc32c(data: bytes) -> int:
    """The CRC as TFRecord stores it (rotated and offset, so CRCs of CRCs stay apart)."""
    crc = crc32c(data)
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def record(data: bytes) -> bytes:
    """One TFRecord holding ``data``."""
    length = struct.pack("<Q", len(data))
    return b"".join(
        (
            length,
            struct.pack("<I", masked_crc32c(length)),
            data,
            struct.pack("<I", masked_crc32c(data)),
        )
    )


def _varint(value: int) -> bytes:
    if 0 <= value < 0x80:
        return _ONE_BYTE[value]
    if value < 0:
        value += 1 << 64  # int64 on the wire: two's complement, ten bytes
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


_ONE_BYTE = [bytes((value,)) for value in range(0x80)]


def _length_delimited(field: int, payload: bytes) -> bytes:
    return _varint(field << 3 | 2) + _varint(len(payload)) + payload


def version_event(wall_time: float) -> bytes:
    """The first record of every event file."""
    return record(b"\x09" + struct.pack("<d", wall_time) + _length_delimited(3, FILE_VERSION))


def scalars_events(wall_time: float, reports: list[dict[str, Any]]) -> bytes:
    """A record for each report (in the wire shape of ctx.train: group, steps_completed,
    metrics) with metrics: tags ``<group>/<name>``, step ``steps_completed``."""
    chunks = []
    for report in reports:
        group = report["group"]
        scalars = [
            (f"{group}/{name}", as_float(value)) for name, value in report["metrics"].items()
        ]
        if scalars:
            chunks.append(scalars_event(wall_time, report["steps_completed"], scalars))
    return b"".join(chunks)


def scalars_event(wall_time: float, step: int, scalars: list[tuple[str, float]]) -> bytes:
    """One record with every ``(tag, value)`` of ``scalars`` at ``step``. Values are float32
    (``simple_value``): beyond its range they become ±inf; NaN stays NaN."""
    summary = b"".join([value_head(tag) + _float32(value) for tag, value in scalars])
    return record(event_head(wall_time, step, len(summary)) + summary)


def event_head(wall_time: float, step: int, summary_length: int) -> bytes:
    """An Event's bytes up to its Summary's values."""
    return b"".join(
        (
            b"\x09",  # field 1, fixed64: wall_time
            struct.pack("<d", wall_time),
            b"\x10",  # field 2, varint: step
            _varint(step),
            b"\x2a",  # field 5, length-delimited: summary
            _varint(summary_length),
        )
    )


def value_head(tag: str) -> bytes:
    """A Summary Value's bytes up to its four float32 bytes (the same for every value)."""
    head = _tag_cache.get(tag)
    if head is None:
        prefix = _length_delimited(1, tag.encode()) + b"\x15"  # field 2, fixed32
        head = _varint(1 << 3 | 2) + _varint(len(prefix) + 4) + prefix  # Summary field 1
        if len(_tag_cache) < _TAG_CACHE_MAX:
            _tag_cache[tag] = head
    return head


def _float32(value: float) -> bytes:
    try:
        return struct.pack("<f", value)
    except OverflowError:  # finite, but beyond float32's range
        return struct.pack("<f", math.copysign(math.inf, value))


def as_float(value: Any) -> float:
    """A metric's value as a double; an int beyond its range as ±inf."""
    try:
        return float(value)
    except OverflowError:  # an int beyond a double's range
        return math.inf if value > 0 else -math.inf
