"""`python -m shipyard.server`: run the master in the foreground."""

from __future__ import annotations

import argparse
import errno
import logging
import socket
import sys
from pathlib import Path
from types import FrameType

from shipyard.common.errors import ConfigError

try:
    import uvicorn
    from fastapi import FastAPI

    from shipyard.server.app import create_app
    from shipyard.server.auth.bootstrap import is_loopback
    from shipyard.server.settings import Settings
except ImportError as exc:  # `pip install shipyard` without the master's extra
    if (exc.name or "shipyard").startswith("shipyard"):
        raise  # a bug of ours, not a missing package
    sys.exit(
        f"python -m shipyard.server needs the master's packages (no {exc.name} here): "
        "pip install 'shipyard[server]'"
    )


def _port_free(host: str, port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                return False
            raise
    return True


def _unsafe_setting(settings: Settings) -> str | None:
    """Why the master must not start with these settings, if it must not."""
    if not settings.auth and not is_loopback(settings.host):
        return (
            f"--host {settings.host} would let anyone who reaches this machine use the master: "
            "listen beyond 127.0.0.1 only with authentication on (drop --no-auth)"
        )
    if (settings.tls_cert is None) != (settings.tls_key is None):
        return "--tls-cert and --tls-key go together: give both or neither"
    for path in (settings.tls_cert, settings.tls_key):
        if path is not None and not path.is_file():
            return f"{path}: no such file"
    return None


class _Server(uvicorn.Server):
    def __init__(self, config: uvicorn.Config, app: FastAPI) -> None:
        super().__init__(config)
        self.master_app = app  # config.app is typed as any ASGI app; this one has a state

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        # Trials' 30 s long-polls would hold the graceful shutdown until its timeout.
        state = getattr(self.master_app.state, "master", None)
        if state is not None:
            state.hub.release_all()
        super().handle_exit(sig, frame)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m shipyard.server")
    parser.add_argument("--host")
    parser.add_argument("--port", type=int)
    parser.add_argument("--home", type=Path)
    parser.add_argument("--slots", type=int, help="CPU slots when no GPU is found")
    parser.add_argument("--config", dest="config_file", type=Path, help="master config (YAML)")
    parser.add_argument(
        "--no-auth",
        dest="auth",
        action="store_const",
        const=False,
        help="trust every request (only on 127.0.0.1; for benchmarks and single-user tests)",
    )
    parser.add_argument("--tls-cert", type=Path, help="serve HTTPS with this certificate (PEM)")
    parser.add_argument("--tls-key", type=Path, help="the certificate's private key (PEM)")
    args = parser.parse_args(argv)
    overrides = {k: v for k, v in vars(args).items() if v is not None}
    settings = Settings(**overrides)
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    problem = _unsafe_setting(settings)
    if problem:
        print(f"error: {problem}", file=sys.stderr)
        return 2
    if not _port_free(settings.host, settings.port):
        print(
            f"error: port {settings.port} on {settings.host} is already in use; "
            "stop what uses it or pick another with --port",
            file=sys.stderr,
        )
        return 2
    try:
        app = create_app(settings)  # reads the master config and lays out the pools
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    config = uvicorn.Config(
        app,
        host=settings.host,
        port=settings.port,
        log_level="warning",
        access_log=False,
        timeout_keep_alive=30,
        timeout_graceful_shutdown=2,
        ssl_certfile=settings.tls_cert,
        ssl_keyfile=settings.tls_key,
    )
    _Server(config, app).run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
