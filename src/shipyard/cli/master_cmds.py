"""`shipyard up`, `down` and `status`: the local master's lifecycle and what it is doing."""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path
from typing import Annotated

import typer

from shipyard.cli.context import open_session
from shipyard.cli.master_process import (
    MasterLaunch,
    exec_foreground,
    probe_master,
    require_server_packages,
    running_master_pid,
    start_background,
    stop_master,
    take_admin_password,
    web_ui_link,
)
from shipyard.cli.output import JsonFlag, out, print_json, say
from shipyard.cli.render import fields_table, fmt_time, slots_table
from shipyard.client.experiments import list_experiments
from shipyard.client.master import get_master, list_slots
from shipyard.client.master_url import read_master_state, shipyard_home

HomeOption = Annotated[
    Path | None,
    typer.Option(
        "--home",
        help="State directory (database, logs, checkpoints). "
        "Default: $SHIPYARD_HOME or ~/.shipyard.",
    ),
]


def _home(home: Path | None) -> Path:
    return (home or shipyard_home()).expanduser().resolve()


def up(
    port: Annotated[int, typer.Option(help="Port to listen on.")] = 8080,
    host: Annotated[str, typer.Option(help="Address to listen on.")] = "127.0.0.1",
    home: HomeOption = None,
    slots: Annotated[
        int | None,
        typer.Option(min=1, help="CPU slots when there is no GPU (default: one a core)."),
    ] = None,
    config: Annotated[
        Path | None,
        typer.Option(
            exists=True, dir_okay=False, help="Master config file (resource pools), YAML."
        ),
    ] = None,
    foreground: Annotated[
        bool, typer.Option("--foreground", help="Run in this process (for service managers).")
    ] = False,
    no_auth: Annotated[
        bool,
        typer.Option(
            "--no-auth",
            help="Trust every request as yours (only on 127.0.0.1; single-user tests).",
        ),
    ] = False,
    tls_cert: Annotated[
        Path | None,
        typer.Option(exists=True, dir_okay=False, help="Serve HTTPS with this certificate (PEM)."),
    ] = None,
    tls_key: Annotated[
        Path | None,
        typer.Option(exists=True, dir_okay=False, help="The certificate's private key (PEM)."),
    ] = None,
) -> None:
    """Start the master (in the background unless --foreground), then show the first
    admin's one-time password (once) and a web UI link that logs you in. The master needs
    Shipyard's server extra, which a plain `pip install shipyard` leaves out."""
    if (tls_cert is None) != (tls_key is None):
        raise typer.BadParameter("give both or neither", param_hint="'--tls-cert' / '--tls-key'")
    launch = MasterLaunch(
        host=host,
        port=port,
        home=_home(home),
        slots=slots,
        config=config.resolve() if config else None,
        auth=not no_auth,
        tls_cert=tls_cert.resolve() if tls_cert else None,
        tls_key=tls_key.resolve() if tls_key else None,
    )
    if launch.tls_cert is not None:
        # `up` checks the master it starts against its certificate, as trials do.
        os.environ.setdefault("SHIPYARD_CA_CERT", str(launch.tls_cert))
    health = probe_master(launch.url)
    if health:
        say(f"A Shipyard master already answers at {launch.url}.")
        announce(launch, health)
        return
    pid = running_master_pid(launch.home)
    if pid is not None:
        state = read_master_state(launch.home) or {}
        say(f"A master for {launch.home} is already running (pid {pid}) at {state.get('url')}.")
        return
    require_server_packages("shipyard up")
    if foreground:
        exec_foreground(launch)
        return
    pid = start_background(launch)
    say(f"Shipyard master running at {launch.url} (pid {pid}); log: {launch.log_path}")
    announce(launch, probe_master(launch.url) or {})


def announce(launch: MasterLaunch, health: dict) -> None:
    """The first admin's one-time password, once, and a web UI link that logs you in."""
    admin = take_admin_password(launch.home)
    if admin is not None:
        name, password = admin
        say(
            f"Cluster admin: {name}, one-time password: {password} "
            "(shown once; change it with `shipyard user change-password`)",
            style="bold",
        )
    say(f"Web UI: {web_ui_link(launch.url, launch.home, health)}")


def down(home: HomeOption = None) -> None:
    """Stop the master that `shipyard up` started."""
    say(stop_master(_home(home)))


def status(ctx: typer.Context, json_output: JsonFlag = False) -> None:
    """The master, its slots, and how many trials are in each state."""
    session = open_session(ctx)
    info = get_master(session)
    slots = list_slots(session)
    trial_states: Counter[str] = Counter()
    # Every experiment's trials, archived ones too (up to the API's 10,000 newest).
    for experiment in list_experiments(session, archived="all", limit=10_000):
        trial_states.update(experiment.trial_states)
    if json_output:
        print_json(
            {"url": session.url, "master": info, "slots": slots, "trial_states": trial_states}
        )
        return
    out.print(
        fields_table(
            [
                ("URL", session.url),
                ("Version", info.version),
                ("Database", info.database),
                ("Home", info.home),
                ("Backend", info.backend),
                ("Started", fmt_time(info.started_at)),
            ]
        )
    )
    out.print(slots_table(slots))
    counts = ", ".join(f"{state} {n}" for state, n in sorted(trial_states.items()) if n)
    say(f"Trials: {counts or 'none'}")
