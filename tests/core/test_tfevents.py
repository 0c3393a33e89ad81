"""TensorBoard event files written by hand (shipyard.core._tfevents, its numpy path
_tfevents_numpy, _tensorboard's writer): the CRC32C, the TFRecord framing, the numpy path's
bytes against the pure-Python path's, and files that TensorBoard's own reader reads back."""

from __future__ import annotations

import io
import math
import os
import random
import struct
import subprocess
import sys
import types
import warnings

import pytest

from shipyard.core import _tfevents, _tfevents_numpy
from shipyard.core._tensorboard import NUMPY_AFTER_POINTS, ScalarWriter

# TensorBoard's own pure-Python reader (it checks both CRCs of every record), not
# TensorFlow's, whose import alone takes 20 s here: this module is what TensorBoard
# looks for to use its stub of TensorFlow.
sys.modules.setdefault("tensorboard.compat.notf", types.ModuleType("tensorboard.compat.notf"))

with warnings.catch_warnings():  # google.api_core's FutureWarning about Python 3.11
    warnings.simplefilter("ignore", FutureWarning)
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    from tensorboard.compat.proto.event_pb2 import Event
    from tensorboard.summary.writer.record_writer import RecordWriter


def _bitwise_crc32c(data: bytes) -> int:
    """The definition, one bit at a time."""
    crc = 0xFFFFFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ 0x82F63B78 if crc & 1 else crc >> 1
    return crc ^ 0xFFFFFFFF


@pytest.mark.parametrize(
    ("data", "crc"),
    [
        (b"123456789", 0xE3069283),  # the check value of CRC-32C
        (b"", 0x00000000),
        (bytes(32), 0x8A9136AA),  # RFC 3720 (iSCSI), B.4
        (b"\xff" * 32, 0x62A8AB43),
        (bytes(range(32)), 0x46DD794E),
        (bytes(range(31, -1, -1)), 0x113FDB5C),
    ],
)
def test_crc32c_of_known_vectors(data, crc):
    assert _tfevents.crc32c(data) == crc


def test_crc32c_matches_the_definition_at_every_length():
    rng = random.Random(7)
    for length in range(70):  # every tail length after the 8-byte steps
        data = bytes(rng.randrange(256) for _ in range(length))
        assert _tfevents.crc32c(data) == _bitwise_crc32c(data), length


def test_records_are_framed_as_tensorboards_own_writer_frames_them():
    data = _tfevents.scalars_event(1.5, 3, [("training/loss", 0.25)])[12:-4]
    theirs = io.BytesIO()
    RecordWriter(theirs).write(data)
    assert _tfevents.record(data) == theirs.getvalue()


def test_events_decode_with_tensorboards_protobufs():
    version = Event.FromString(_tfevents.version_event(1700000000.25)[12:-4])
    assert version.file_version == "brain.Event:2" and version.wall_time == 1700000000.25
    raw = _tfevents.scalars_event(
        1700000001.5, 2**40, [("validation/val_loss", 0.5), ("test/é", -3.0)]
    )
    (length,) = struct.unpack("<Q", raw[:8])
    assert len(raw) == 8 + 4 + length + 4
    event = Event.FromString(raw[12:-4])
    assert (event.wall_time, event.step) == (1700000001.5, 2**40)
    assert [(v.tag, v.simple_value) for v in event.summary.value] == [
        ("validation/val_loss", 0.5),
        ("test/é", -3.0),
    ]


def _random_batch(rng: random.Random) -> list[dict]:
    """A sender's batch: runs of one group and metric names (some of them reordered, some
    empty) interleaved, steps whose varints take 1 to 10 bytes, and values a float32 cannot
    hold exactly or at all."""
    groups = ["training", "validation", "test-set.v2"]
    names = [("loss",), ("loss", "acc"), ("acc", "loss"), ("a", "b", "c", "d"), ("é" * 70,), ()]
    odd = [0.0, -0.0, math.nan, -math.nan, math.inf, -math.inf, 1e300, -1e39, 3.4028235e38]
    odd += [3.4028236e38, 1e-46, 7, -(2**62), 2**70, True, False, 2**53 + 1]

    def value() -> object:
        return rng.choice(odd) if rng.random() < 0.3 else rng.uniform(-1e6, 1e6)

    step = rng.choice([0, 100, 2**14 - 20, 2**35, 2**63 - 30])
    key = (rng.choice(groups), rng.choice(names))
    batch = []
    for _ in range(rng.randrange(1, 300)):
        if rng.random() < 0.05:
            key = (rng.choice(groups), rng.choice(names))
        step = rng.choice([step + 1, step + 1, step + rng.randrange(1 << rng.randrange(1, 60))])
        if rng.random() < 0.01:
            step = rng.randrange(2**64)
        step = min(step, 2**64 - 1)
        metrics = {name: value() for name in key[1]}
        batch.append({"group": key[0], "steps_completed": step, "metrics": metrics})
    return batch


@pytest.mark.parametrize("min_rows", [1, _tfevents_numpy.MIN_ROWS])
def test_the_numpy_path_writes_the_same_bytes_as_the_pure_python_path(monkeypatch, min_rows):
    monkeypatch.setattr(_tfevents_numpy, "MIN_ROWS", min_rows)  # 1: every run through numpy
    rng = random.Random(20)
    for _ in range(100):
        batch = _random_batch(rng)
        wall_time = rng.uniform(0, 2e9)
        assert _tfevents_numpy.scalars_events(wall_time, batch) == _tfevents.scalars_events(
            wall_time, batch
        )


def test_the_numpy_path_leaves_what_numpy_cannot_hold_to_the_pure_python_path():
    report = {"group": "training", "steps_completed": 1, "metrics": {"loss": 1.0}}
    assert _tfevents_numpy.scalars_events(1.0, [report] * 10) is not None
    big_int = {**report, "metrics": {"loss": 10**400}}  # beyond float64
    assert _tfevents_numpy.scalars_events(1.0, [report] * 10 + [big_int]) is None
    huge_step = {**report, "steps_completed": 2**64}  # beyond uint64
    assert _tfevents_numpy.scalars_events(1.0, [huge_step] + [report] * 10) is None


def _read_back(directory) -> dict[str, list[tuple[int, float]]]:
    accumulator = EventAccumulator(str(directory), size_guidance={"scalars": 0})  # keep all
    accumulator.Reload()
    return {
        tag: [(e.step, e.value) for e in accumulator.Scalars(tag)]
        for tag in accumulator.Tags()["scalars"]
    }


def test_tensorboards_reader_reads_the_scalars_back(tmp_path):
    writer = ScalarWriter(tmp_path / "tb")
    writer.write(
        [
            {"group": "training", "steps_completed": 1, "metrics": {"loss": 0.5, "lr": 1}},
            {"group": "training", "steps_completed": 2, "metrics": {"loss": 0.25, "lr": 1}},
        ]
    )
    writer.write(
        [
            {"group": "validation", "steps_completed": 2, "metrics": {"val_loss": 0.125}},
            {"group": "test-set.v2", "steps_completed": 2, "metrics": {"accuracy": 0.9}},
            {"group": "training", "steps_completed": 3, "metrics": {}},  # nothing to write
        ]
    )
    writer.close()

    [name] = os.listdir(tmp_path / "tb")
    assert name.startswith("events.out.tfevents.") and name.endswith(".shipyard")
    scalars = _read_back(tmp_path / "tb")
    assert scalars == {
        "training/loss": [(1, 0.5), (2, 0.25)],
        "training/lr": [(1, 1.0), (2, 1.0)],
        "validation/val_loss": [(2, 0.125)],
        "test-set.v2/accuracy": [(2, pytest.approx(0.9, rel=1e-7))],  # a float32
    }


def test_tensorboards_reader_reads_a_large_batch_back(tmp_path):
    # Runs long enough for the numpy path, across varint lengths (steps 127/128, 16383/16384).
    reports = [
        {"group": "training", "steps_completed": step, "metrics": {"loss": step / 4, "lr": 0.5}}
        for step in range(100, 20_000, 7)
    ] + [{"group": "validation", "steps_completed": 20_000, "metrics": {"val_loss": 0.125}}]
    writer = ScalarWriter(tmp_path)
    writer.write(reports)
    writer.close()

    steps = list(range(100, 20_000, 7))
    assert _read_back(tmp_path) == {
        "training/loss": [(step, step / 4) for step in steps],
        "training/lr": [(step, 0.5) for step in steps],
        "validation/val_loss": [(20_000, 0.125)],
    }


SWITCH = """
import sys
from pathlib import Path
from shipyard.core._tensorboard import NUMPY_AFTER_POINTS, ScalarWriter

def reports(steps):
    return [{"group": "training", "steps_completed": s, "metrics": {"loss": s / 2}} for s in steps]

writer = ScalarWriter(Path(sys.argv[1]))
writer.write(reports(range(NUMPY_AFTER_POINTS - 1)))
writer.write(reports([NUMPY_AFTER_POINTS - 1]))
print("numpy" in sys.modules)
writer.write(reports(range(NUMPY_AFTER_POINTS, NUMPY_AFTER_POINTS + 100)))
print("numpy" in sys.modules)
writer.close()
"""


def test_the_writer_imports_numpy_only_after_enough_points(tmp_path):
    result = subprocess.run(
        [sys.executable, "-c", SWITCH, str(tmp_path)], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["False", "True"]
    steps = range(NUMPY_AFTER_POINTS + 100)
    assert _read_back(tmp_path) == {"training/loss": [(step, step / 2) for step in steps]}


def test_values_a_float32_cannot_hold(tmp_path):
    writer = ScalarWriter(tmp_path)
    metrics = {"nan": math.nan, "inf": -math.inf, "huge": 1e300, "bigint": -(10**400), "b": True}
    writer.write([{"group": "validation", "steps_completed": 7, "metrics": metrics}])
    writer.close()

    scalars = _read_back(tmp_path)
    assert math.isnan(scalars["validation/nan"][0][1])
    assert scalars["validation/inf"] == [(7, -math.inf)]
    assert scalars["validation/huge"] == [(7, math.inf)]
    assert scalars["validation/bigint"] == [(7, -math.inf)]
    assert scalars["validation/b"] == [(7, 1.0)]


def test_each_writer_has_its_own_file_and_a_closed_one_writes_nothing(tmp_path):
    first, second = ScalarWriter(tmp_path), ScalarWriter(tmp_path)
    first.write([{"group": "training", "steps_completed": 1, "metrics": {"loss": 1.0}}])
    first.close()
    first.write([{"group": "training", "steps_completed": 9, "metrics": {"loss": 9.0}}])
    second.write([{"group": "training", "steps_completed": 2, "metrics": {"loss": 2.0}}])
    second.close()

    assert len(os.listdir(tmp_path)) == 2
    assert _read_back(tmp_path) == {"training/loss": [(1, 1.0), (2, 2.0)]}


def test_a_failing_write_turns_the_writer_off_and_says_so(tmp_path, capsys):
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("")
    writer = ScalarWriter(blocker / "tb")
    report = {"group": "training", "steps_completed": 1, "metrics": {"loss": 1.0}}
    writer.write([report])
    writer.write([report])
    assert capsys.readouterr().err.count("TensorBoard scalars are no longer written") == 1


def test_reports_naming_the_same_metrics_in_another_order_keep_their_own_tag_order():
    # Grouped into one layout only with the same names in the same order (core/_columns.py):
    # a record's tags are in its report's order, on either path.
    batch = [
        {"group": "training", "steps_completed": step, "metrics": metrics}
        for step in range(1, 41)
        for metrics in [
            {"loss": step / 10, "acc": 1 / step}
            if step % 3
            else {"acc": 1 / step, "loss": step / 10}
        ]
    ]
    assert _tfevents_numpy.scalars_events(5.0, batch) == _tfevents.scalars_events(5.0, batch)
