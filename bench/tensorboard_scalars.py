"""TensorBoard scalars: what writing Shipyard's metrics into a trial's event file costs the
sender thread (shipyard.core._tensorboard.ScalarWriter), per report and per point.

The report calls themselves do not pay it (they only queue); the sender thread does, after
each delivery, holding the GIL meanwhile. Measured for batches like the sender's (1,000 and
10,000 points, reports of 1 and 4 metrics) with each of the writer's two encoders, which
give the same bytes (tests/core/test_tfevents.py): pure Python (_tfevents) and numpy
(_tfevents_numpy, taken once numpy is imported, or after NUMPY_AFTER_POINTS points); for one
report of 10 metrics a write (a loop reporting now and then: the whole write, file
included); what importing numpy costs a process that has not yet; and against the peer in
the same run: TensorBoard's own record writer with its protobuf Event (what a SummaryWriter
writes, with TensorBoard's pure-Python CRC). Times are CPU time (process_time): what the
sender takes from the training loop, however busy the machine. Prints one JSON object.
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

from _stats import summary

from shipyard.core import _tfevents
from shipyard.core._tensorboard import ScalarWriter

METRICS = 10  # a report, for one report a write and the peer
REPORTS = 2000
SENDER_BATCHES = [(1, 1_000), (1, 10_000), (4, 1_000), (4, 10_000)]  # (metrics, points)
POINTS = 40_000  # a sender batch's figure: over this many points
REPETITIONS = 7


def _reports(count: int, start: int = 0, metrics: int = METRICS) -> list[dict]:
    return [
        {
            "group": "training",
            "steps_completed": start + i,
            "metrics": {f"metric_{m}": 1.0 / (start + i + m + 1) for m in range(metrics)},
        }
        for i in range(count)
    ]


def one_report_a_write_us(directory: Path) -> float:
    writer = ScalarWriter(directory)
    reports = [_reports(1, start) for start in range(REPORTS)]
    began = time.process_time()
    for report in reports:
        writer.write(report)
    elapsed = time.process_time() - began
    writer.close()
    return elapsed / REPORTS * 1e6


def encoder_us_per_point(encode, metrics: int, points: int) -> float:
    """CPU µs a point for batches of ``points`` points (the file's write not included: the
    same for both encoders)."""
    per_batch = points // metrics
    batches = [
        _reports(per_batch, 1000 + start, metrics)
        for start in range(0, POINTS // metrics, per_batch)
    ]
    began = time.process_time()
    for reports in batches:
        encode(time.time(), reports)
    return (time.process_time() - began) / POINTS * 1e6


def numpy_import_ms() -> float:
    code = "import time; t = time.process_time(); import numpy; print(time.process_time() - t)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return float(out.stdout) * 1e3


def peer_us_per_report() -> float:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        from tensorboard.compat.proto import event_pb2, summary_pb2
        from tensorboard.summary.writer.record_writer import RecordWriter

    writer = RecordWriter(io.BytesIO())
    reports = _reports(REPORTS)
    began = time.process_time()
    for report in reports:
        values = [
            summary_pb2.Summary.Value(tag=f"{report['group']}/{name}", simple_value=value)
            for name, value in report["metrics"].items()
        ]
        event = event_pb2.Event(
            wall_time=time.time(),
            step=report["steps_completed"],
            summary=summary_pb2.Summary(value=values),
        )
        writer.write(event.SerializeToString())
    return (time.process_time() - began) / REPORTS * 1e6


def crc_ns_per_byte() -> float:
    data = bytes(range(256)) * 16
    began = time.process_time()
    for _ in range(50):
        _tfevents.crc32c(data)
    return (time.process_time() - began) / (50 * len(data)) * 1e9


def main() -> None:
    from shipyard.core import _tfevents_numpy

    encoders = {"python": _tfevents.scalars_events, "numpy": _tfevents_numpy.scalars_events}
    batched: dict[str, list[float]] = {}
    one, peer, imports, crc = [], [], [], []
    with tempfile.TemporaryDirectory() as scratch:
        for repetition in range(REPETITIONS):
            for metrics, points in SENDER_BATCHES:
                for name, encode in encoders.items():
                    key = f"{name}_{metrics}_metrics_a_report_{points}_points_a_batch"
                    sample = encoder_us_per_point(encode, metrics, points)
                    batched.setdefault(key, []).append(sample)
            one.append(one_report_a_write_us(Path(scratch, f"one-{repetition}")))
            peer.append(peer_us_per_report())
            imports.append(numpy_import_ms())
            crc.append(crc_ns_per_byte())
    print(
        json.dumps(
            {
                "benchmark": "tensorboard_scalars",
                "what": "writing reports as TensorBoard scalars, in the sender thread (CPU time)",
                "us_per_point": {key: summary(v, digits=2) for key, v in batched.items()},
                f"us_per_report_of_{METRICS}_metrics_one_a_write": summary(one, digits=1),
                f"peer_tensorboard_record_writer_us_per_report_of_{METRICS}_metrics": summary(
                    peer, digits=1
                ),
                "numpy_import_ms": summary(imports, digits=0),
                "pure_python_crc32c_ns_per_byte": summary(crc, digits=1),
            }
        )
    )


if __name__ == "__main__":
    main()
