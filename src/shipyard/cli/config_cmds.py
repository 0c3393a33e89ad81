"""`shipyard config validate`: check an experiment config without a master."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from shipyard.cli.output import print_json, say
from shipyard.client.contexts import collect_context_files
from shipyard.client.submit import load_local_config

if TYPE_CHECKING:  # imported when a config is read (client/submit.py says why)
    from shipyard.common.config import ExperimentConfig

app = typer.Typer(no_args_is_help=True)


def config_summary(config: ExperimentConfig) -> str:
    """`searcher random, 8 trials, entrypoint: python3 train.py`."""
    searcher = config.searcher_dict()
    name = searcher["name"]
    if name == "single":
        trials = "1 trial"
    elif name == "grid" and hasattr(config, "grid_size"):
        trials = f"{config.grid_size()} trials"
    else:
        trials = f"up to {searcher.get('max_trials')} trials"
    return f"searcher {name}, {trials}, entrypoint: {' '.join(config.entrypoint_argv())}"


@app.command()
def validate(
    file: Annotated[Path, typer.Argument(help="Experiment config (YAML).")],
    context: Annotated[
        Path | None,
        typer.Option(help="Also check that the entrypoint script is in this code directory."),
    ] = None,
    json_output: Annotated[
        bool, typer.Option("--json", help="Print the normalized config as JSON.")
    ] = False,
) -> None:
    """Check a config here, as the master would; print a summary or every problem found."""
    config = load_local_config(file)
    if context is not None:
        from shipyard.common.config import validate_context

        validate_context(config, set(collect_context_files(context)))
    if json_output:
        print_json(config.to_json_dict())
        return
    say(f"{file} is valid", style="green")
    say(config_summary(config))
