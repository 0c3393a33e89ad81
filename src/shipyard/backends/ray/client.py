"""The master's side of the driver process (driver.py): start it, send requests, wait for
answers with a timeout, and notice when it died and why. Nothing here imports Ray."""

from __future__ import annotations

import collections
import itertools
import subprocess
import sys
import threading
from typing import Any

from shipyard.backends.ray import protocol


class DriverUnavailable(Exception):
    """The driver is not running, died, or did not answer in time: the cluster's state is
    unknown, not bad."""


class RemoteError(Exception):
    """The driver answered with an error (kind: the exception's class name there)."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


class _Pending:
    def __init__(self) -> None:
        self.done = threading.Event()
        self.answer: dict[str, Any] | None = None


class DriverProcess:
    def __init__(self, address: str, namespace: str, timeout_s: float) -> None:
        self._proc = subprocess.Popen(
            [sys.executable, "-m", "shipyard.backends.ray.driver", "--address", address]
            + ["--namespace", namespace, "--timeout-s", str(timeout_s)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,  # a ^C to the master is not the driver's
        )
        self._ids = itertools.count(protocol.READY_ID + 1)
        self._pending: dict[int, _Pending] = {protocol.READY_ID: _Pending()}
        self._lock = threading.Lock()
        self._write_lock = threading.Lock()
        self._stderr: collections.deque[str] = collections.deque(maxlen=20)
        self.dead_reason: str | None = None
        threading.Thread(target=self._read, daemon=True, name="ray-driver-out").start()
        threading.Thread(target=self._drain_stderr, daemon=True, name="ray-driver-err").start()

    def wait_ready(self, timeout: float) -> None:
        self._wait(protocol.READY_ID, self._pending[protocol.READY_ID], timeout)

    def call(self, op: str, timeout: float, **args: Any) -> Any:
        rid = next(self._ids)
        pending = _Pending()
        with self._lock:
            if self.dead_reason is not None:
                raise DriverUnavailable(self.dead_reason)
            self._pending[rid] = pending
        try:
            with self._write_lock:
                assert self._proc.stdin is not None
                self._proc.stdin.write(protocol.encode({"id": rid, "op": op, "args": args}))
                self._proc.stdin.flush()
        except OSError as exc:
            self._pending.pop(rid, None)
            why = self.dead_reason or f"the driver process is gone: {exc}"
            raise DriverUnavailable(why) from exc
        return self._wait(rid, pending, timeout)

    def _wait(self, rid: int, pending: _Pending, timeout: float) -> Any:
        finished = pending.done.wait(timeout)
        with self._lock:
            self._pending.pop(rid, None)
        if not finished:
            raise DriverUnavailable(f"no answer within {timeout:.0f} s")
        answer = pending.answer
        if answer is None:  # woken by the driver's death
            raise DriverUnavailable(self.dead_reason or "the driver process exited")
        if not answer.get("ok"):
            if rid == protocol.READY_ID:
                raise DriverUnavailable(answer.get("error") or "the driver could not connect")
            raise RemoteError(answer.get("kind", "Error"), answer.get("error", ""))
        return answer.get("result")

    def _read(self) -> None:
        assert self._proc.stdout is not None
        for line in self._proc.stdout:
            try:
                answer = protocol.decode(line)
            except ValueError:
                continue
            with self._lock:
                pending = self._pending.get(answer.get("id", -1))
            if pending is not None:
                if answer.get("id") == protocol.READY_ID and not answer.get("ok"):
                    self.dead_reason = answer.get("error")
                pending.answer = answer
                pending.done.set()
        code = self._proc.wait()
        with self._lock:
            if self.dead_reason is None:
                last = self._stderr[-1] if self._stderr else "no message"
                self.dead_reason = f"the driver process exited with code {code} ({last})"
            waiting = list(self._pending.values())
        for pending in waiting:
            pending.done.set()

    def _drain_stderr(self) -> None:
        assert self._proc.stderr is not None
        for line in self._proc.stderr:
            text = line.decode(errors="replace").strip()
            if text:
                self._stderr.append(text)

    @property
    def alive(self) -> bool:
        return self.dead_reason is None and self._proc.poll() is None

    def close(self) -> None:
        """Stop the driver; the cluster's actors (the trials) keep running."""
        try:
            assert self._proc.stdin is not None
            self._proc.stdin.close()  # the driver ends at EOF
            self._proc.wait(10)
        except (OSError, subprocess.TimeoutExpired):
            self._proc.kill()
            self._proc.wait()
