"""Telling the master why a run failed: the exception leaving ``with shipyard.core.init()``.

An exit code says that a run failed, not why; the reason was only in the run's logs. The
master appends this message to the run's exit reason (``trial describe``).
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from shipyard.core._http import JsonHttp

MAX_CHARS = 1000
# One short try: the process is on its way out and the exception must not wait on a master
# that is away (the exit code still reaches the master through the backend).
TIMEOUT_S = 5.0


def failure_message(exc: BaseException) -> str | None:
    """``"<ExceptionType>: <message>"`` on one line, at most MAX_CHARS; None for an exit
    that carries nothing the exit code does not say."""
    if isinstance(exc, KeyboardInterrupt):
        return None  # someone interrupted it by hand; the signal is in the exit reason
    if isinstance(exc, SystemExit):
        if exc.code is None or isinstance(exc.code, int):
            return None  # 0 is success, and any other number is the exit code itself
        text = f"SystemExit: {exc.code}"  # sys.exit("message"): the message is the reason
    else:
        try:
            detail = str(exc)
        except Exception:  # noqa: BLE001 - a broken __str__ must not replace the error
            detail = ""
        name = type(exc).__name__
        text = f"{name}: {detail}" if detail else name
    text = " ".join(text.split())  # an exit reason is one line
    return text if len(text) <= MAX_CHARS else text[: MAX_CHARS - 1] + "…"


def send_run_error(
    http: JsonHttp,
    trial_id: int,
    run_id: int,
    message: str,
    *,
    append: bool = False,
    who: str = "[shipyard] ",
) -> None:
    """POST the message to the master; a failure is noted on stderr (its line starting with
    ``who``) and otherwise ignored, so it never hides the exception it describes.
    ``append``: keep what the run already reported (a gang launcher naming the failed rank)."""
    message = _masked(message)
    body = {"run_id": run_id, "message": message, **({"append": True} if append else {})}
    try:
        http.request("POST", f"/api/v1/trials/{trial_id}/run-error", body, timeout_s=TIMEOUT_S)
    except Exception as exc:  # noqa: BLE001 - see the docstring
        print(f"{who}could not tell the master why this run failed: {exc}", file=sys.stderr)


def _masked(message: str) -> str:
    """The message with the run's secret values masked, as its output is (an exception may
    quote a token, e.g. in a URL). Only a run given secrets pays for the import."""
    if not (os.environ.get("SHIPYARD_MASK_ENV") or os.environ.get("SHIPYARD_SECRETS_DIR")):
        return message
    from shipyard.common.masking import Masker, values_from_env

    try:
        masker = Masker(values_from_env(os.environ))
    except (OSError, ValueError):  # a secret file gone: say nothing rather than leak
        return "the run failed (its message is not sent: its secrets could not be read)"
    return masker.mask(message.encode(errors="replace")).decode(errors="replace")
