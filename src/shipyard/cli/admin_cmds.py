"""`shipyard admin audit`: the master's audit log, for cluster admins."""

from __future__ import annotations

import json
import re
from datetime import datetime, timedelta
from typing import Annotated

import typer
from rich.table import Table

from shipyard.cli.context import open_session
from shipyard.cli.output import JsonFlag, out, print_json, say
from shipyard.cli.render import add_row, fmt_time
from shipyard.client import users
from shipyard.common.api_users import AuditEventInfo

app = typer.Typer(no_args_is_help=True)

UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days", "w": "weeks"}
RELATIVE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw])\s*$", re.IGNORECASE)


def parse_since(text: str, now: datetime | None = None) -> datetime:
    """`30m`, `1h`, `2d`, `1w` ago, or an ISO date/time (local time unless it says)."""
    now = now or datetime.now().astimezone()
    relative = RELATIVE.match(text)
    if relative:
        amount, unit = float(relative.group(1)), relative.group(2).lower()
        try:
            return now - timedelta(**{UNITS[unit]: amount})
        except OverflowError:
            raise typer.BadParameter(f"{text!r} is too long ago", param_hint="'--since'") from None
    try:
        moment = datetime.fromisoformat(text.strip())
    except ValueError:
        raise typer.BadParameter(
            f"{text!r} is neither a time ago (30m, 1h, 2d, 1w) nor an ISO date or time "
            "(2025-01-31, 2025-01-31T09:00, 2025-01-31T09:00+01:00)",
            param_hint="'--since'",
        ) from None
    return moment if moment.tzinfo else moment.astimezone()  # naive: this machine's time


def audit_table(events: list[AuditEventInfo]) -> Table:
    table = Table()
    for column in ("Time", "Actor", "Action", "Target", "Address", "Detail"):
        table.add_column(column, no_wrap=column in ("Time", "Action"))
    for event in events:
        detail = ", ".join(
            f"{key}={value if isinstance(value, str) else json.dumps(value)}"
            for key, value in event.detail.items()
        )
        add_row(
            table,
            fmt_time(event.at),
            event.actor,
            event.action,
            event.target or "-",
            event.address or "-",
            detail,
        )
    return table


@app.command()
def audit(
    ctx: typer.Context,
    since: Annotated[
        str | None,
        typer.Option(
            help="Only events since then: a time ago (30m, 1h, 2d, 1w) or an ISO date/time.",
            metavar="WHEN",
        ),
    ] = None,
    user: Annotated[
        str | None, typer.Option(help="Only events by or about this user.", metavar="NAME")
    ] = None,
    limit: Annotated[int, typer.Option(min=1, max=10_000, help="Show at most this many.")] = 100,
    json_output: JsonFlag = False,
) -> None:
    """Logins, failed logins, tokens made and revoked, users made and changed: newest first."""
    since_at = parse_since(since) if since is not None else None
    events = users.list_audit_events(open_session(ctx), since=since_at, user=user, limit=limit)
    if json_output:
        print_json(events)
    elif not events:
        say("No audit events match.")
    else:
        out.print(audit_table(events))
