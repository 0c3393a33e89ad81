"""`shipyard model create | register | list | describe | alias | download | archive |
unarchive | delete | delete-version`: the model registry (named models, immutable versions,
movable aliases)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table
from rich.text import Text

from shipyard.cli.context import open_session
from shipyard.cli.output import (
    CsvFlag,
    JsonFlag,
    check_one_format,
    confirm_or_exit,
    out,
    print_json,
    print_list,
    print_table_csv,
    say,
    transfer_bar,
)
from shipyard.cli.render import add_row, fields_table, fmt_number, fmt_time
from shipyard.client import models
from shipyard.client.checkpoints import download_checkpoint
from shipyard.client.model_uri import parse_model_ref
from shipyard.common.api_models import ModelSummary, ModelVersionDetail, ModelVersionInfo
from shipyard.common.errors import InvalidRequest

app = typer.Typer(no_args_is_help=True)

Name = Annotated[str, typer.Argument(help="The model's name.", metavar="NAME")]
Workspace = Annotated[
    str | None,
    typer.Option(
        "--workspace",
        "-w",
        help="The model's workspace: to create one (default Uncategorized), or to name one "
        "whose name is in several workspaces you see.",
    ),
]
Description = Annotated[str, typer.Option("--description", "-d", help="A description.")]
Tags = Annotated[list[str] | None, typer.Option("--tag", "-t", help="A tag (repeat for several).")]


@app.command()
def create(
    ctx: typer.Context,
    name: Name,
    workspace: Workspace = None,
    description: Description = "",
    tag: Tags = None,
    json_output: JsonFlag = False,
) -> None:
    """Create a model (no version yet): `shipyard model register` adds checkpoints to it."""
    made = models.create_model(
        open_session(ctx), name, workspace=workspace, description=description, tags=tag or ()
    )
    if json_output:
        print_json(made)
    else:
        say(f"Created model {made.name} in workspace {made.workspace}.")


@app.command()
def register(
    ctx: typer.Context,
    name: Name,
    checkpoint: Annotated[
        str, typer.Argument(help="The checkpoint's UUID (a COMPLETED one).", metavar="UUID")
    ],
    workspace: Workspace = None,
    description: Description = "",
    tag: Tags = None,
    json_output: JsonFlag = False,
) -> None:
    """Register a checkpoint as the model's next version. A version never changes, and its
    checkpoint is never deleted by retention while the version exists."""
    made = models.register_version(
        open_session(ctx),
        name,
        checkpoint,
        workspace=workspace,
        description=description,
        tags=tag or (),
    )
    if json_output:
        print_json(made)
    else:
        say(
            f"Registered checkpoint {made.checkpoint_uuid} (trial {made.trial_id}, step "
            f"{made.steps_completed}) as version {made.version} of model {made.model}."
        )


def _models_table(found: list[ModelSummary]) -> Table:
    table = Table()
    for column in (
        "Name",
        "Workspace",
        "Versions",
        "Latest",
        "Aliases",
        "Tags",
        "Owner",
        "Created",
    ):
        table.add_column(column, justify="right" if column in ("Versions", "Latest") else "left")
    for m in found:
        add_row(
            table,
            m.name + (" (archived)" if m.archived else ""),
            m.workspace,
            str(m.num_versions),
            "-" if m.latest_version is None else str(m.latest_version),
            ", ".join(f"{a.alias}→{a.version}" for a in m.aliases) or "-",
            ", ".join(m.tags) or "-",
            m.owner or "-",
            fmt_time(m.created_at),
        )
    return table


@app.command("list")
def list_(
    ctx: typer.Context,
    workspace: Annotated[
        str | None, typer.Option("--workspace", "-w", help="Only this workspace's models.")
    ] = None,
    all_: Annotated[bool, typer.Option("--all", "-a", help="Archived models too.")] = False,
    json_output: JsonFlag = False,
    csv_output: CsvFlag = False,
) -> None:
    """The models of the workspaces you see (archived ones with --all)."""
    found = models.list_models(
        open_session(ctx), workspace=workspace, archived=None if all_ else False
    )
    print_list(
        found,
        _models_table,
        json_output=json_output,
        csv_output=csv_output,
        empty="No models yet: `shipyard model create NAME` makes one.",
    )


def _versions_table(versions: list[ModelVersionInfo]) -> Table:
    table = Table(title="Versions")
    columns = ("Version", "Aliases", "Checkpoint", "Experiment", "Trial", "Steps", "Tags")
    for column in (*columns, "Registered", "By", "Description"):
        table.add_column(column, no_wrap=column == "Checkpoint")
    for v in versions:
        add_row(
            table,
            str(v.version),
            ", ".join(v.aliases) or "-",
            v.checkpoint_uuid,
            str(v.experiment_id),
            str(v.trial_id),
            str(v.steps_completed),
            ", ".join(v.tags) or "-",
            fmt_time(v.created_at),
            v.created_by or "-",
            v.description or "-",
        )
    return table


def _lineage_rows(detail: ModelVersionDetail) -> list[tuple[str, object]]:
    lineage = detail.lineage
    code = lineage.code or {}
    env = lineage.environment
    commit = code.get("commit")
    if commit and code.get("dirty"):
        commit = f"{commit} (with uncommitted changes)"
    metrics = ", ".join(f"{k}={fmt_number(v)}" for k, v in lineage.validation_metrics.items())
    return [
        ("Version", f"{detail.model}/{detail.version} (workspace {detail.workspace})"),
        ("Aliases", ", ".join(detail.aliases)),
        ("Checkpoint", detail.checkpoint_uuid),
        ("Experiment", f"{lineage.experiment_name} ({lineage.experiment_id})"),
        ("Trial", f"{lineage.trial_id} (run {lineage.run_id})"),
        ("Steps completed", lineage.checkpoint.steps_completed),
        ("Validation metrics", metrics),
        ("Searcher metric", lineage.searcher_metric),
        ("Hyperparameters", json.dumps(lineage.hyperparameters, sort_keys=True)),
        ("Commit", commit or "- (not submitted from a git work tree)"),
        ("Branch", code.get("branch")),
        ("Remote", code.get("remote")),
        ("Code snapshot", lineage.context_id),
        ("Python", env.python if env else "- (the run captured no environment)"),
        ("Torch", f"{env.torch} (CUDA {env.cuda or '-'})" if env and env.torch else None),
        ("OS", env.os if env else None),
        ("GPUs", ", ".join(env.gpus) if env and env.gpus else None),
        ("Packages", env.packages if env else None),
        ("Registered", f"{fmt_time(detail.created_at)} by {detail.created_by or '-'}"),
        ("Description", detail.description),
        ("Tags", ", ".join(detail.tags)),
    ]


@app.command()
def describe(
    ctx: typer.Context,
    ref: Annotated[
        str,
        typer.Argument(
            help="NAME (its latest version), NAME@ALIAS, NAME/VERSION or a model URI "
            "(shipyard://models/...).",
            metavar="NAME[@ALIAS|/VERSION]",
        ),
    ],
    workspace: Workspace = None,
    json_output: JsonFlag = False,
) -> None:
    """A model: its versions and aliases, and the lineage of one version (the latest, or
    the one named): checkpoint, trial, experiment, commit, environment, validation metrics."""
    chosen = parse_model_ref(ref, workspace)
    session = open_session(ctx)
    model = models.get_model(session, chosen.name, workspace=chosen.workspace)
    where = model.workspace
    version = models.resolve(session, replace(chosen, workspace=where)) if model.versions else None
    if json_output:
        print_json({"model": model, "version": version})
        return
    rows: list[tuple[str, object]] = [
        ("Model", model.name + (" (archived)" if model.archived else "")),
        ("Workspace", where),
        ("Owner", model.owner),
        ("Created", fmt_time(model.created_at)),
        ("Description", model.description),
        ("Tags", ", ".join(model.tags)),
        ("Aliases", ", ".join(f"{a.alias} → {a.version}" for a in model.aliases)),
    ]
    out.print(fields_table(rows))
    if not model.versions:
        say(f"No version yet: `shipyard model register {model.name} UUID` adds one.")
        return
    out.print(_versions_table(model.versions))
    assert version is not None
    out.print(Text(f"Lineage of version {version.version}", style="bold"))
    out.print(fields_table(_lineage_rows(version)))


@app.command()
def versions(
    ctx: typer.Context,
    name: Name,
    workspace: Workspace = None,
    json_output: JsonFlag = False,
    csv_output: CsvFlag = False,
) -> None:
    """The model's versions: checkpoint, trial, step, aliases."""
    check_one_format(json_output=json_output, csv_output=csv_output)
    found = models.get_model(open_session(ctx), name, workspace=workspace).versions
    if json_output:
        print_json(found)
    elif csv_output:
        print_table_csv(_versions_table(found))
    else:
        out.print(_versions_table(found))


@app.command()
def alias(
    ctx: typer.Context,
    name: Name,
    alias_name: Annotated[str, typer.Argument(help="The alias, e.g. production.", metavar="ALIAS")],
    version: Annotated[
        int | None,
        typer.Argument(help="The version it names from now on.", metavar="[VERSION]", min=1),
    ] = None,
    delete: Annotated[bool, typer.Option("--delete", help="Remove the alias.")] = False,
    workspace: Workspace = None,
    json_output: JsonFlag = False,
) -> None:
    """Point an alias at a version (made, or moved from the version it named), or remove
    it with --delete. Versions never change; aliases move."""
    session = open_session(ctx)
    if delete == (version is not None):
        raise InvalidRequest("give the VERSION the alias names, or --delete (not both)")
    if delete:
        removed = models.delete_alias(session, name, alias_name, workspace=workspace)
        if json_output:
            print_json(removed)
        else:
            say(f"Removed alias {alias_name} of model {name} (it named version {removed.version}).")
        return
    assert version is not None
    moved = models.set_alias(session, name, alias_name, version, workspace=workspace)
    if json_output:
        print_json(moved)
    else:
        say(f"{name}@{moved.alias} is version {moved.version} now.")


@app.command()
def download(
    ctx: typer.Context,
    ref: Annotated[
        str,
        typer.Argument(
            help="NAME@ALIAS, NAME/VERSION, NAME (its latest version) or a model URI.",
            metavar="MODEL",
        ),
    ],
    dest: Annotated[
        Path | None,
        typer.Argument(
            help="Where to unpack its files (created if needed; default: models/NAME/VERSION).",
            metavar="[DEST]",
            show_default=False,
        ),
    ] = None,
    workspace: Workspace = None,
    json_output: Annotated[
        bool, typer.Option("--json", help="Print the version, where and which files, as JSON.")
    ] = False,
) -> None:
    """Download a model version's checkpoint files into a directory."""
    session = open_session(ctx)
    version = models.resolve(session, parse_model_ref(ref, workspace))
    target = dest or Path("models", version.model, str(version.version))
    label = f"{version.model}/{version.version}"
    with transfer_bar(label, enabled=not json_output) as progress:
        files = download_checkpoint(session, version.checkpoint_uuid, target, progress=progress)
    if json_output:
        print_json({"version": version, "path": str(target), "files": files})
    else:
        say(
            f"Downloaded {label} (checkpoint {version.checkpoint_uuid}, {len(files)} files) "
            f"to {target}"
        )


def _set_archived(ctx: typer.Context, name: str, workspace: str | None, archived: bool) -> None:
    changed = models.change_model(open_session(ctx), name, workspace=workspace, archived=archived)
    what = "Archived" if archived else "Unarchived"
    say(f"{what} model {changed.name} (workspace {changed.workspace}).")


@app.command()
def archive(ctx: typer.Context, name: Name, workspace: Workspace = None) -> None:
    """Hide a model from lists; it takes no new version until unarchived."""
    _set_archived(ctx, name, workspace, True)


@app.command()
def unarchive(ctx: typer.Context, name: Name, workspace: Workspace = None) -> None:
    """Show an archived model in lists again; it takes new versions again."""
    _set_archived(ctx, name, workspace, False)


@app.command()
def delete(
    ctx: typer.Context,
    name: Name,
    workspace: Workspace = None,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")] = False,
    json_output: JsonFlag = False,
) -> None:
    """Delete a model with its versions and aliases. Its checkpoints stay, but retention
    no longer spares them. Asks first, naming the aliases if it has any."""
    session = open_session(ctx)
    model = models.get_model(session, name, workspace=workspace)
    if not yes:
        count = len(model.versions)
        question = (
            f"Delete model {model.name} (workspace {model.workspace}) and its {count} versions?"
        )
        if model.aliases:
            named = ", ".join(f"{a.alias} → version {a.version}" for a in model.aliases)
            question = (
                f"Aliases name its versions ({named}): something may deploy from them. {question}"
            )
        confirm_or_exit(question)
    # force only past the aliases that were asked about (or with --yes): one made since the
    # question is refused by the master (409).
    force = yes or bool(model.aliases)
    deleted = models.delete_model(session, model.name, workspace=model.workspace, force=force)
    if json_output:
        print_json(deleted)
    else:
        say(
            f"Deleted model {deleted.name}: {deleted.versions} versions, aliases removed: "
            f"{', '.join(deleted.aliases) or 'none'}. Its checkpoints are kept."
        )


@app.command("delete-version")
def delete_version(
    ctx: typer.Context,
    name: Name,
    version: Annotated[int, typer.Argument(help="The version's number.", metavar="VERSION", min=1)],
    workspace: Workspace = None,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")] = False,
    json_output: JsonFlag = False,
) -> None:
    """Delete one version of a model, with the aliases that name it. Its checkpoint stays,
    and its number is never given again. Asks first, naming the aliases if it has any."""
    session = open_session(ctx)
    found = models.get_version(session, name, version, workspace=workspace)
    if not yes:
        question = (
            f"Delete version {found.version} of model {name} (checkpoint "
            f"{found.checkpoint_uuid})? Its number is not given again."
        )
        if found.aliases:
            named = ", ".join(found.aliases)
            question = f"Aliases name it ({named}): something may deploy from them. {question}"
        confirm_or_exit(question)
    # force only past the aliases that were asked about (or with --yes): one moved onto it
    # since the question is refused by the master (409).
    force = yes or bool(found.aliases)
    deleted = models.delete_version(session, name, version, workspace=workspace, force=force)
    if json_output:
        print_json(deleted)
    else:
        say(
            f"Deleted version {deleted.version} of model {deleted.name}; aliases removed: "
            f"{', '.join(deleted.aliases) or 'none'}. Its checkpoint {deleted.checkpoint_uuid} "
            "is kept."
        )
