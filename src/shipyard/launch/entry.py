"""`python3 -m shipyard.launch.entry [--] CMD ARGS...`: a trial on a node that shares nothing
with the master (docs/share-nothing.md).

The master puts this in front of the entrypoint when the trial's pool does not see the
master's disk (a `kubernetes` pool without `shared_fs`). It
- fetches the experiment's code snapshot and config from the master with the run's task
  token ($SHIPYARD_CONTEXT_ID; cached on the node by content hash) and runs CMD in the
  trial's own working directory on the node;
- writes the run's secret files ($SHIPYARD_SECRET_FILES) in a private directory on the node,
  removed when CMD ends, and masks the run's secret values in CMD's output (as
  shipyard.launch.masked does);
- sends the output to the master in numbered batches ($SHIPYARD_SHIP_LOGS=1), while also
  writing it on its own stdout (what `kubectl logs` shows).
The exit status is CMD's, a death by signal N included.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sys
import tarfile
import tempfile
from pathlib import Path

from shipyard.common.determined_shim import with_shim
from shipyard.common.errors import ShipyardError
from shipyard.common.files import write_private_files
from shipyard.common.log_prefix import LAUNCHER
from shipyard.common.masking import SECRETS_DIR_ENV, Masker, values_from_env
from shipyard.common.node_env import CA_PEM_ENV, CONTEXT_ENV, SECRET_FILES_ENV, SHIP_LOGS_ENV
from shipyard.core._http import JsonHttp
from shipyard.launch import _code
from shipyard.launch._exits import tell_master
from shipyard.launch._ship import LogShipper
from shipyard.launch.masked import EXIT_CANNOT_START, exit_as, run_relayed

ARGV = ["python3", "-m", "shipyard.launch.entry", "--"]
SHIP_CLOSE_S = 30.0  # after CMD exits, how long the last lines may take to reach the master


class _Tee:
    """The relay's output: this process's stdout and the shipper."""

    def __init__(self, *outs) -> None:
        self._outs = outs

    def write(self, data: bytes) -> None:
        for out in self._outs:
            try:
                out.write(data)
            except (BrokenPipeError, ValueError, OSError):
                pass  # no stdout (a closed pipe): the master still gets the lines

    def flush(self) -> None:
        for out in self._outs:
            try:
                out.flush()
            except (BrokenPipeError, ValueError, OSError):
                pass


def main(argv: list[str] | None = None) -> int:
    command = list(sys.argv[1:] if argv is None else argv)
    if command[:1] == ["--"]:
        command = command[1:]
    env = dict(os.environ)
    try:
        master, trial_id, run_id = (
            env["SHIPYARD_MASTER"],
            env["SHIPYARD_TRIAL_ID"],
            env["SHIPYARD_RUN_ID"],
        )
    except KeyError as exc:
        print(
            f"shipyard.launch.entry runs inside a Shipyard trial: {exc} is not set", file=sys.stderr
        )
        return 2
    if not command:
        print("usage: python3 -m shipyard.launch.entry [--] CMD ARGS...", file=sys.stderr)
        return 2
    _trust_masters_certificate(env)
    http = JsonHttp(master)
    shipper = None
    out: _Tee = _Tee(sys.stdout.buffer)
    if env.get(SHIP_LOGS_ENV) == "1":
        source = int(env.get("SHIPYARD_NODE_RANK") or 0)
        shipper = LogShipper(http, int(trial_id), int(run_id), source)
        out = _Tee(sys.stdout.buffer, shipper)
    try:
        code = _run(command, env, http, out, master, int(trial_id))
    except Exception as exc:  # noqa: BLE001 - told where the run's output goes, then raised
        _say(out, f"shipyard.launch.entry failed: {type(exc).__name__}: {exc}")
        raise
    finally:
        if shipper is not None and not shipper.close(SHIP_CLOSE_S):
            print("shipyard: some of this run's output did not reach the master", file=sys.stderr)
    return exit_as(code)


def _run(
    command: list[str], env: dict[str, str], http: JsonHttp, out: _Tee, master: str, trial_id: int
) -> int:
    files = env.pop(SECRET_FILES_ENV, "")  # not passed on to the trial
    with contextlib.ExitStack() as stack:
        try:
            if files:  # a private directory of this run's, removed when it ends
                secrets_dir = Path(stack.enter_context(tempfile.TemporaryDirectory()))
                write_private_files(secrets_dir, json.loads(files))
                env[SECRETS_DIR_ENV] = str(secrets_dir)
            masker = Masker(values_from_env(env))
        except (OSError, ValueError) as exc:  # fail closed: never run unmasked
            _say(out, f"cannot read the run's secrets: {exc}")
            return EXIT_CANNOT_START
        return _run_in_its_code(command, env, http, out, master, trial_id, masker)


def _run_in_its_code(
    command: list[str],
    env: dict[str, str],
    http: JsonHttp,
    out: _Tee,
    master: str,
    trial_id: int,
    masker: Masker,
) -> int:
    cwd = None
    with_shim(env)  # this node's install: `import determined` is Shipyard's shim
    context_id = env.get(CONTEXT_ENV)
    if context_id is not None:
        try:
            cache, days = _code.cache_dir(env), _code.keep_days(env)
            files = _code.fetch(http, trial_id, context_id, master, cache, days)
        except (ShipyardError, OSError, tarfile.TarError) as exc:
            message = f"cannot fetch the trial's code from the master: {exc}"
            _say(out, message)
            tell_master(message)
            return EXIT_CANNOT_START
        cwd = str(files.workdir)
        env["SHIPYARD_EXPERIMENT_CONFIG"] = str(files.config_path)
        where = (
            f"downloaded ({files.downloaded_bytes} bytes)"
            if files.downloaded_bytes
            else "from this node's cache"
        )
        if context_id:
            _say(out, f"code {context_id[:12]} {where}, in {cwd}")
    # Sharing nothing, the master reads no Pod log: a command that cannot start says so in
    # the output it is sent.
    return run_relayed(command, out, masker, cwd=cwd, env=env, say=lambda m: _say(out, m))


def _trust_masters_certificate(env: dict[str, str]) -> None:
    """The master's certificate came by value ($SHIPYARD_CA_CERT_PEM): as a file on the node
    for this process and the trial, which read $SHIPYARD_CA_CERT."""
    pem = env.pop(CA_PEM_ENV, None)
    if not pem:
        return
    path = _code.cache_dir(env) / "ca" / f"{hashlib.sha256(pem.encode()).hexdigest()[:16]}.pem"
    if not path.is_file():
        _code.write_atomically(path, pem.encode())
    env["SHIPYARD_CA_CERT"] = os.environ["SHIPYARD_CA_CERT"] = str(path)
    os.environ.pop(CA_PEM_ENV, None)


def _say(out: _Tee, message: str) -> None:
    out.write(f"{LAUNCHER}{message}\n".encode())
    out.flush()


if __name__ == "__main__":
    sys.exit(main())
