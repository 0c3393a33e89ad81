"""Retrying calls to a master that may be restarting."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from shipyard.common.errors import MasterUnavailable

if TYPE_CHECKING:
    from shipyard.core._http import JsonHttp

# A master restart (new process, database recovery) takes seconds; give it a minute.
RETRY_WINDOW_S = 60.0
# Retries back off only to this: a master that is back answers within it, and a refused
# connection costs the restarting master nothing (bench/recovery.py: a 5 s cap made 50
# trials wait 1.2-2.4 s longer after the master was up).
MAX_RETRY_DELAY_S = 0.25
T = TypeVar("T")


def request_with_retry(
    http: JsonHttp,
    method: str,
    path: str,
    body: Any = None,
    *,
    window_s: float = RETRY_WINDOW_S,
) -> Any:
    """Send until the master answers; retry only transport failures and 5xx (MasterUnavailable),
    with backoff, for ``window_s`` seconds. A 4xx answer is raised at once: resending won't help."""
    return with_retry(lambda: http.request(method, path, body), window_s=window_s)


def with_retry(call: Callable[[], T], *, window_s: float = RETRY_WINDOW_S) -> T:
    """``call()`` until the master answers it, as request_with_retry does."""
    deadline = time.monotonic() + window_s
    delay = 0.1
    while True:
        try:
            return call()
        except MasterUnavailable as exc:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise MasterUnavailable(
                    f"the master did not answer for {window_s:.0f} s: {exc.message}"
                ) from exc
            time.sleep(min(delay, remaining))
            delay = min(delay * 2, MAX_RETRY_DELAY_S)
