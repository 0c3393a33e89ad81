"""Engine, sessions and migrations.

SQLite runs in WAL mode with synchronous=FULL. Writers take the lock at BEGIN (BEGIN
IMMEDIATE), so two writers never deadlock upgrading read locks; readers use deferred
transactions and never block. Writers of this process also queue on a Python lock first.
One master process writes the database, so this serializes every write transaction, on
PostgreSQL too (where READ COMMITTED would otherwise let two writers act on the same stale
read), and on SQLite it replaces SQLite's busy handler, which polls with sleeps of up to
100 ms.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from sqlalchemy import create_engine, event
from sqlalchemy.engine import Engine
from sqlalchemy.exc import DBAPIError
from sqlalchemy.orm import Session, sessionmaker

MIGRATIONS = Path(__file__).parent / "migrations"
# The newest migration (tests/server/test_migrations.py checks it): a database already there
# starts without importing Alembic, which costs a restarting master ~0.2 s.
HEAD_REVISION = "0015"


def make_engine(url: str) -> Engine:
    if not url.startswith("sqlite"):
        return create_engine(url, pool_pre_ping=True, pool_size=10, max_overflow=20)
    engine = create_engine(
        url, connect_args={"check_same_thread": False, "timeout": 30}, pool_size=20, max_overflow=20
    )

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn, _record) -> None:
        dbapi_conn.isolation_level = None  # we issue BEGIN ourselves, below
        cur = dbapi_conn.cursor()
        cur.execute("PRAGMA journal_mode=WAL")
        # FULL: a commit is on disk before it is acknowledged, so a state change survives a
        # power loss, not only a killed master (NORMAL's promise in WAL mode). Measured with
        # bench/trial_throughput.py: no difference beyond the machine's noise.
        cur.execute("PRAGMA synchronous=FULL")
        cur.execute("PRAGMA busy_timeout=30000")
        cur.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn) -> None:
        mode = conn.get_execution_options().get("sqlite_begin", "DEFERRED")
        conn.exec_driver_sql(f"BEGIN {mode}")

    return engine


class Database:
    def __init__(self, url: str) -> None:
        self.url = url
        self.engine = make_engine(url)
        self.dialect = self.engine.dialect.name
        writer = self.engine.execution_options(sqlite_begin="IMMEDIATE")
        self._read = sessionmaker(self.engine, expire_on_commit=False)
        self._write = sessionmaker(writer, expire_on_commit=False)
        self._writer_lock = threading.Lock()

    def migrate(self) -> None:
        if self._revision() == HEAD_REVISION:
            return
        from alembic import command  # heavy: imported only when there is something to do
        from alembic.config import Config

        cfg = Config()
        cfg.set_main_option("script_location", str(MIGRATIONS))
        with self.engine.begin() as conn:
            cfg.attributes["connection"] = conn
            command.upgrade(cfg, "head")

    def _revision(self) -> str | None:
        try:
            with self.engine.connect() as conn:
                return conn.exec_driver_sql("SELECT version_num FROM alembic_version").scalar()
        except DBAPIError:  # a new database: no table yet
            return None

    @contextmanager
    def read(self) -> Iterator[Session]:
        with self._read() as session:
            yield session

    @contextmanager
    def write(self) -> Iterator[Session]:
        """One transaction, committed on a clean exit, rolled back on an exception."""
        with self._writer_lock, self._write() as session, session.begin():
            yield session

    def close(self) -> None:
        self.engine.dispose()
