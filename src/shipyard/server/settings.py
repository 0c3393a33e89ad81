"""The master's one Settings object (environment prefix SHIPYARD_)."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="SHIPYARD_", extra="ignore")

    home: Path = Field(default_factory=lambda: Path.home() / ".shipyard")
    host: str = "127.0.0.1"
    port: int = 8080
    db_url: str | None = None  # default: SQLite file in home
    slots: int | None = None  # CPU slots when no GPU is found; default: one per core
    max_context_mb: int = 96
    # The largest artifact a trial may record (ctx.artifacts; the trial side reads the same
    # variable, SHIPYARD_ARTIFACT_MAX_BYTES, and refuses a larger one before writing it).
    artifact_max_bytes: int = 64 * 2**20
    # The master's config file (resource pools); see server/pools.py.
    config_file: Path | None = None
    # A trial asked to give up its slots (preemption, pause) is killed after this long,
    # unless its experiment sets preemption_timeout (Determined's default: an hour).
    preempt_timeout_s: float = 3600.0
    # A trial the searcher stopped that has not exited after this long is terminated.
    stop_grace_s: float = 60.0
    kill_grace_s: float = 10.0
    poll_interval_s: float = 1.0
    # Every request must say who sends it (users' tokens and sessions, trials' task
    # tokens). Off (--no-auth) only on 127.0.0.1: every request is then the local user's.
    auth: bool = True
    # On 127.0.0.1, keep a token of the local user in $SHIPYARD_HOME/auth.json (laptop mode).
    local_token: bool = True
    admin_user: str | None = None  # the first admin's name (default: the local user)
    # HTTPS: uvicorn's certificate and key (PEM files); trials trust tls_cert.
    tls_cert: Path | None = None
    tls_key: Path | None = None
    # Workspace secrets' key (base64 of 32 bytes) from the operator's own secret store;
    # unset: a keyring in $SHIPYARD_HOME/secrets.key (server/auth/secret_box.py).
    secrets_key: SecretStr | None = None

    @property
    def database_url(self) -> str:
        return self.db_url or f"sqlite:///{self.home / 'shipyard.db'}"

    @property
    def master_url(self) -> str:
        host = "127.0.0.1" if self.host in ("0.0.0.0", "") else self.host
        scheme = "https" if self.tls_cert else "http"
        return f"{scheme}://{host}:{self.port}"

    def ensure_dirs(self) -> None:
        for sub in ("contexts", "trials", "logs", "checkpoints", "experiments"):
            (self.home / sub).mkdir(parents=True, exist_ok=True)
