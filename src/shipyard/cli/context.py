"""What every command shares: the master chosen by the global --master option."""

from __future__ import annotations

import typer

from shipyard.client.session import Session


def master_option(ctx: typer.Context) -> str | None:
    obj = ctx.find_root().obj
    return obj.get("master") if isinstance(obj, dict) else None


def open_session(ctx: typer.Context) -> Session:
    """A session to the master, closed when the command finishes."""
    session = Session(master_option(ctx))
    ctx.call_on_close(session.close)
    return session
