"""TensorBoard scalars: what writing Shipyard's metrics into a trial's event file costs the
sender thread (shipyard.core._tensorboard.ScalarWriter), per report of METRICS metrics.

The report calls themselves do not pay it (they only queue); the sender thread does, after
each delivery, holding the GIL meanwhile. Measured for one report a delivery (a loop
reporting now and then) and for batches of BATCH (a loop reporting every step), against
the peer in the same run: TensorBoard's own record writer with its protobuf Event (what
a SummaryWriter writes, with TensorBoard's pure-Python CRC). Times are CPU time
(process_time): what the sender takes from the training loop, however busy the machine.
Prints one JSON object.
"""

from __future__ import annotations

import io
import json
import tempfile
import time
import warnings
from pathlib import Path

from _stats import summary

from shipyard.core import _tfevents
from shipyard.core._tensorboard import ScalarWriter

METRICS = 10
REPORTS = 2000
BATCH = 50
REPETITIONS = 7


def _reports(count: int, start: int = 0) -> list[dict]:
    return [
        {
            "group": "training",
            "steps_completed": start + i,
            "metrics": {f"metric_{m}": 1.0 / (start + i + m + 1) for m in range(METRICS)},
        }
        for i in range(count)
    ]


def shipyard_us_per_report(directory: Path, batch: int) -> float:
    writer = ScalarWriter(directory)
    batches = [_reports(batch, start) for start in range(0, REPORTS, batch)]
    began = time.process_time()
    for reports in batches:
        writer.write(reports)
    elapsed = time.process_time() - began
    writer.close()
    return elapsed / REPORTS * 1e6


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
    one, batched, peer, crc = [], [], [], []
    with tempfile.TemporaryDirectory() as scratch:
        for repetition in range(REPETITIONS):
            one.append(shipyard_us_per_report(Path(scratch, f"one-{repetition}"), 1))
            batched.append(shipyard_us_per_report(Path(scratch, f"batch-{repetition}"), BATCH))
            peer.append(peer_us_per_report())
            crc.append(crc_ns_per_byte())
        size = _tfevents.scalars_event(time.time(), 1000, [("training/metric_0", 0.5)] * METRICS)
    print(
        json.dumps(
            {
                "benchmark": "tensorboard_scalars",
                "unit": "µs per report",
                "what": f"writing a report of {METRICS} metrics as TensorBoard scalars, in "
                "the sender thread",
                "shipyard_one_report_a_write": summary(one, digits=1),
                f"shipyard_{BATCH}_reports_a_write": summary(batched, digits=1),
                "peer_tensorboard_record_writer": summary(peer, digits=1),
                "crc32c_ns_per_byte": summary(crc, digits=1),
                "record_bytes": len(size),
            }
        )
    )


if __name__ == "__main__":
    main()
