"""Each rank tells the master, once at its start, the environment it runs in
(shipyard.common.environment): a gang's ranks may sit on different machines.

The capture reads a few hundred small files and may wait on NVML, so it runs in a thread
of its own and the training starts at once; the context's close waits for it a little, so
a short run still sends its record. A capture or a send that fails is noted on stderr and
never fails the run. SHIPYARD_CAPTURE_ENVIRONMENT=0 turns it off."""

from __future__ import annotations

import os
import sys
import threading
from typing import TYPE_CHECKING

from shipyard.common.masking import values_from_env

if TYPE_CHECKING:
    from shipyard.core._http import JsonHttp

SEND_TIMEOUT_S = 10.0
CLOSE_WAIT_S = 3.0  # at the context's close: the NVML probe's timeout and a send


class EnvironmentReport:
    def __init__(self, http: JsonHttp, trial_id: int, run_id: int, rank: int) -> None:
        self._http = http
        self._path = f"/api/v1/trials/{trial_id}/environment"
        self._run_id = run_id
        self._rank = rank
        self._thread = threading.Thread(target=self._run, daemon=True, name="env-capture")
        self._thread.start()

    def _run(self) -> None:
        try:
            from shipyard.common.environment import capture_environment

            record = capture_environment(secret_values=values_from_env(os.environ))
            body = {"run_id": self._run_id, "rank": self._rank, "record": record}
            self._http.request("POST", self._path, body, timeout_s=SEND_TIMEOUT_S)
        except Exception as exc:  # noqa: BLE001 - a record is never worth a failed run
            print(f"[shipyard] could not record this run's environment: {exc}", file=sys.stderr)
        finally:
            self._http.close()  # this thread's connection

    def close(self) -> None:
        self._thread.join(CLOSE_WAIT_S)


def start_report(master: str, trial_id: int, run_id: int, rank: int) -> EnvironmentReport | None:
    if os.environ.get("SHIPYARD_CAPTURE_ENVIRONMENT", "1") == "0":
        return None
    from shipyard.core._http import JsonHttp

    return EnvironmentReport(JsonHttp(master), trial_id, run_id, rank)
