"""PostgreSQL for bench/ui_scale.py: a throwaway cluster (the tests' one, tests/fixtures/
postgres.py, started with the settings a phase asks for), and a database of finished trials
and their validation points written with COPY, as fast as PostgreSQL takes them.

The cluster is initdb'd into a temp dir and listens on 127.0.0.1 at a free port (and a unix
socket in the temp dir); it is stopped and removed at the end. Loading runs with crash
safety off (LOAD_SETTINGS); the cluster is then started again with PostgreSQL's defaults to
be measured.
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np
import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the benchmarks run as scripts

from tests.fixtures.postgres import (  # noqa: E402
    DATABASE,
    SUPERUSER,
    ThrowawayCluster,
    _server_user,
    find_postgres_binary,
    free_port,
)

# While seeding only: a throwaway cluster need not survive a crash; big sorts for the index
# builds; no checkpoint or autovacuum in the middle of the load (VACUUM ANALYZE runs after).
LOAD_SETTINGS = {
    "fsync": "off",
    "synchronous_commit": "off",
    "full_page_writes": "off",
    "maintenance_work_mem": "1GB",
    "max_wal_size": "8GB",
    "checkpoint_timeout": "30min",
    "autovacuum": "off",
}
# What the benchmark measures with: PostgreSQL's defaults (initdb's postgresql.conf).
MEASURE_SETTINGS: dict[str, str] = {}
SHOWN = (
    *("server_version", "shared_buffers", "work_mem", "effective_cache_size", "fsync"),
    *("synchronous_commit", "full_page_writes", "max_wal_size", "autovacuum", "jit"),
)

# The metric tables seeded with COPY; metric_points' indexes may be dropped and rebuilt.
SEEDED = ("trials", "metric_points", "metric_summaries")
BINARY_SIGNATURE = b"PGCOPY\n\xff\r\n\x00" + b"\x00\x00\x00\x00" + b"\x00\x00\x00\x00"
BINARY_TRAILER = b"\xff\xff"
# One metric_points row in COPY's binary format: the field count, then each field's length
# and big-endian value (trial_id int4, key_id int4, steps_completed int8, value float8,
# run_id int4): 50 bytes, written from a numpy array without a Python object a row.
POINT_ROW = np.dtype(
    [("fields", ">i2")]
    + [
        part
        for name, kind in (("trial", ">i4"), ("key", ">i4"), ("step", ">i8"))
        + (("value", ">f8"), ("run", ">i4"))
        for part in ((f"{name}_len", ">i4"), (name, kind))
    ]
)


class Cluster(ThrowawayCluster):
    """The tests' throwaway cluster, started with the server settings given."""

    def __init__(self) -> None:
        binaries = {name: find_postgres_binary(name) for name in ("initdb", "pg_ctl", "createdb")}
        missing = [name for name, path in binaries.items() if path is None]
        if missing:
            raise RuntimeError(f"PostgreSQL is not installed (not found: {', '.join(missing)})")
        self.binaries: dict[str, str] = binaries  # type: ignore[assignment]
        root = Path(tempfile.mkdtemp(prefix="shipyard-bench-pg-"))
        super().__init__(root, free_port(), _server_user())
        self.running = False

    def serve(self, settings: dict[str, str]) -> None:
        options = (
            f"-p {self.port} -c listen_addresses=127.0.0.1 "
            f"-c unix_socket_directories='{self.socket_dir}'"
        ) + "".join(f" -c {name}={value}" for name, value in settings.items())
        self._run(
            [self.binaries["pg_ctl"], "-D", str(self.data_dir), "-l", str(self.log_file)]
            + ["-o", options, "-w", "-t", "600", "start"]
        )
        self.running = True

    def halt(self, mode: str = "fast") -> None:
        """Stop the server (fast: after a checkpoint, so the next start recovers nothing)."""
        self._run(
            [self.binaries["pg_ctl"], "-D", str(self.data_dir), "-m", mode]
            + ["-w", "-t", "1800", "stop"]
        )
        self.running = False

    def connect(self) -> psycopg.Connection[Any]:
        return psycopg.connect(
            host="127.0.0.1", port=self.port, user=SUPERUSER, dbname=DATABASE, autocommit=True
        )

    def settings(self) -> dict[str, str]:
        with self.connect() as conn:
            return {
                name: conn.execute(f"SHOW {name}").fetchone()[0]  # type: ignore[index]
                for name in SHOWN
            }

    def size_bytes(self) -> int:
        with self.connect() as conn:
            return conn.execute("SELECT pg_database_size(current_database())").fetchone()[0]  # type: ignore[index]


@contextmanager
def throwaway_cluster() -> Iterator[Cluster]:
    """A new cluster with an empty database, serving with LOAD_SETTINGS; removed at the end."""
    cluster = Cluster()
    try:
        cluster.create(cluster.binaries["initdb"])
        cluster.serve(LOAD_SETTINGS)
        cluster.create_database(cluster.binaries["createdb"])
        yield cluster
    finally:
        if cluster.running:
            cluster.halt("immediate")
        shutil.rmtree(cluster.root, ignore_errors=True)


def schema(conn: psycopg.Connection[Any]) -> list[tuple[str, str, str]]:
    """The seeded tables' constraints and indexes, as PostgreSQL describes them."""
    rows = conn.execute(
        "SELECT conrelid::regclass::text, conname, pg_get_constraintdef(oid) FROM pg_constraint "
        "WHERE conrelid::regclass::text = ANY(%(t)s) "
        "UNION ALL SELECT tablename, indexname, indexdef FROM pg_indexes "
        "WHERE schemaname = 'public' AND tablename = ANY(%(t)s) ORDER BY 1, 2, 3",
        {"t": list(SEEDED)},
    ).fetchall()
    return [tuple(row) for row in rows]


def _drop_point_indexes(conn: psycopg.Connection[Any]) -> list[str]:
    """Drop metric_points' constraints and other indexes; the statements that make them again."""
    constraints = conn.execute(
        "SELECT conname, pg_get_constraintdef(oid) FROM pg_constraint "
        "WHERE conrelid = 'metric_points'::regclass"
    ).fetchall()
    indexes = conn.execute(
        "SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'metric_points' "
        "AND indexname NOT IN (SELECT conname FROM pg_constraint "
        "WHERE conrelid = 'metric_points'::regclass)"
    ).fetchall()
    for name, _ in constraints:
        conn.execute(f'ALTER TABLE metric_points DROP CONSTRAINT "{name}"')
    for name, _ in indexes:
        conn.execute(f'DROP INDEX "{name}"')
    return [f'ALTER TABLE metric_points ADD CONSTRAINT "{n}" {d}' for n, d in constraints] + [
        d for _, d in indexes
    ]


def _trial_row(columns: list[Any], values: dict[str, Any]) -> list[Any]:
    """A trials row as the master writes one: the ORM's defaults (its Python-side ones, which
    PostgreSQL does not know) under the values given; JSON columns as JSON text."""
    row = []
    for column in columns:
        if column.name in values:
            value = values[column.name]
        elif column.default is not None and column.default.is_scalar:
            value = column.default.arg
        elif column.default is not None and column.default.is_callable:
            value = column.default.arg(None)
        else:
            value = None
        if isinstance(value, (dict, list)):
            value = json.dumps(value)
        row.append(value)
    return row


def seed(
    conn: psycopg.Connection[Any],
    experiment_ids: list[int],
    trials: int,
    points: int,
    *,
    rebuild_indexes: bool,
    ended_at: Callable[[datetime, int, int], datetime],
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Replace each experiment's trials with ``trials`` COMPLETED ones of ``points``
    validation points each (a noisy decaying loss), their summaries and a finished state,
    as bench/ui_scale.py's SQLite seed does, with COPY (trial ``number`` of ``total`` ended
    at ``ended_at(now, number, total)``). ``rebuild_indexes``: drop
    metric_points' primary key for the load and build it after (else it is kept). Ends with
    VACUUM ANALYZE; the tables' constraints and indexes end as they were (checked)."""
    from shipyard.server import orm

    started = time.monotonic()
    phases: dict[str, float] = {}
    before = schema(conn)
    rng = np.random.default_rng(0)
    now = orm.utcnow()
    (workspace,) = conn.execute("SELECT id FROM workspaces").fetchone()  # type: ignore[misc]
    (key_id,) = conn.execute(  # type: ignore[misc]
        'INSERT INTO metric_keys (name, "group") VALUES (%s, %s) RETURNING id',
        ("val_loss", "validation"),
    ).fetchone()
    # The trials the experiments started before they were killed, and what refers to them.
    old = "SELECT id FROM trials WHERE experiment_id = ANY(%(e)s)"
    referring = conn.execute(
        "SELECT c.conrelid::regclass::text, a.attname FROM pg_constraint c JOIN pg_attribute a "
        "ON a.attrelid = c.conrelid AND a.attnum = c.conkey[1] "
        "WHERE c.contype = 'f' AND c.confrelid = 'trials'::regclass"
    ).fetchall()
    with conn.transaction():
        for table, column in referring + [(t, "trial_id") for t in (*SEEDED[1:], "stored_curves")]:
            conn.execute(f'DELETE FROM {table} WHERE "{column}" IN ({old})', {"e": experiment_ids})
        conn.execute(f"DELETE FROM trials WHERE id IN ({old})", {"e": experiment_ids})
        conn.execute(
            "UPDATE experiments SET state = 'COMPLETED', progress = 1.0, searcher_done = true, "
            "ended_at = %s WHERE id = ANY(%s)",
            (now, experiment_ids),
        )
    # The trials' ids, taken from their sequence as a block.
    total = len(experiment_ids) * trials
    (sequence,) = conn.execute("SELECT pg_get_serial_sequence('trials', 'id')").fetchone()  # type: ignore[misc]
    (first,) = conn.execute("SELECT nextval(%s)", (sequence,)).fetchone()  # type: ignore[misc]
    conn.execute("SELECT setval(%s, %s)", (sequence, first + total - 1))
    columns = list(orm.Trial.__table__.columns)
    names = ", ".join(f'"{c.name}"' for c in columns)
    lrs = 10 ** rng.uniform(-4, -1, total)
    widths = rng.integers(16, 513, total)
    phase = time.monotonic()
    with conn.cursor().copy(f"COPY trials ({names}) FROM STDIN") as copy:
        for index, exp_id in enumerate(experiment_ids):
            for n in range(trials):
                number = index * trials + n
                values = {
                    "id": first + number,
                    "experiment_id": exp_id,
                    "workspace_id": workspace,
                    "request_id": f"seed-{exp_id}-{n}",
                    "hparams": {"lr": float(lrs[number]), "width": int(widths[number])},
                    "seed": n,
                    "state": "COMPLETED",
                    "run_id": 1,
                    "steps_completed": points,
                    "started_at": ended_at(now, number, total),
                    "ended_at": ended_at(now, number, total),
                }
                copy.write_row(_trial_row(columns, values))
    phases["trials_s"] = time.monotonic() - phase

    rebuild = _drop_point_indexes(conn) if rebuild_indexes else []
    steps = np.arange(1, points + 1)
    phase = time.monotonic()
    summaries = []
    for index in range(len(experiment_ids)):
        ids = np.arange(trials) + first + index * trials
        floor = rng.uniform(0.05, 0.5, trials)[:, None]
        rate = rng.uniform(0.002, 0.02, trials)[:, None]
        loss = floor + np.exp(-rate * steps) + rng.normal(0, 0.01, (trials, points))
        rows = np.empty(trials * points, POINT_ROW)
        rows["fields"] = 5
        for name, size in (("trial", 4), ("key", 4), ("step", 8), ("value", 8), ("run", 4)):
            rows[f"{name}_len"] = size
        rows["trial"] = np.repeat(ids, points)
        rows["key"] = key_id
        rows["step"] = np.tile(steps, trials)
        rows["value"] = loss.ravel()
        rows["run"] = 1
        with conn.cursor().copy(
            "COPY metric_points (trial_id, key_id, steps_completed, value, run_id) "
            "FROM STDIN (FORMAT BINARY)"
        ) as copy:
            copy.write(BINARY_SIGNATURE)
            data = rows.view(np.uint8).data
            chunk = 8 << 20
            for at in range(0, len(data), chunk):
                copy.write(data[at : at + chunk])
            copy.write(BINARY_TRAILER)
        low, high = loss.argmin(axis=1), loss.argmax(axis=1)
        for n in range(trials):
            summaries.append(
                (int(ids[n]), key_id, points, float(loss[n, -1]), points)
                + (float(loss[n, low[n]]), int(low[n]) + 1)
                + (float(loss[n, high[n]]), int(high[n]) + 1)
            )
        if progress is not None and (index + 1) % 10 == 0:
            progress(f"points of {index + 1}/{len(experiment_ids)} experiments")
    phases["points_s"] = time.monotonic() - phase
    phase = time.monotonic()
    for statement in rebuild:
        conn.execute(statement)
    phases["points_index_s"] = time.monotonic() - phase
    phase = time.monotonic()
    with conn.cursor().copy(
        "COPY metric_summaries (trial_id, key_id, count, last, last_step, min, min_step, max, "
        "max_step) FROM STDIN"
    ) as copy:
        for summary in summaries:
            copy.write_row(summary)
    phases["summaries_s"] = time.monotonic() - phase
    phase = time.monotonic()
    conn.execute("VACUUM ANALYZE")
    phases["vacuum_analyze_s"] = time.monotonic() - phase
    phase = time.monotonic()
    conn.execute("CHECKPOINT")
    phases["checkpoint_s"] = time.monotonic() - phase
    if schema(conn) != before:
        raise RuntimeError("the seeded tables' constraints or indexes are not the master's")
    return {
        "trials": total,
        "points": total * points,
        "seconds": round(time.monotonic() - started, 1),
        "phases_s": {name: round(seconds, 1) for name, seconds in phases.items()},
        "points_index": "dropped and rebuilt" if rebuild_indexes else "kept during the load",
        "settings": LOAD_SETTINGS,
    }


def stored_curve_count(cluster: Cluster, max_points: int) -> dict[int, int]:
    """Experiment id -> how many of its trials have their val_loss curve stored at
    ``max_points``."""
    with cluster.connect() as conn:
        rows = conn.execute(
            "SELECT t.experiment_id, count(*) FROM stored_curves c "
            "JOIN metric_keys k ON k.id = c.key_id JOIN trials t ON t.id = c.trial_id "
            "WHERE k.name = 'val_loss' AND c.max_points = %s GROUP BY t.experiment_id",
            (max_points,),
        ).fetchall()
    return dict(rows)  # type: ignore[arg-type]
