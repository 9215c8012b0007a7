"""The `loom` group: its commands, each command group in a module of its own, and the workspace option that every
command takes, before or after its name (`loom -w WS curate` or `loom curate -w WS`)."""

import functools

import click

from base.errors import UserError
from base.workspace import Workspace
from loom.api.workspace import check_location
from loom.cli import (card, cleanup, curate, init, ladder, mix, mix_export, publish, quality, quickstart, report,
                      reproduce, search, show, sql, status, tokenizer, train)
from loom.cli.console import LoomGroup
from loom.cli.version import version_line

# the commands that can use a workspace on s3:// (and other stores) today
ON_OBJECT_STORAGE = ("curate", "tokenizer", "mix", "sql", "report", "train")
WORKSPACE_HELP = "Workspace folder, or a URL such as s3://bucket/prefix [default: $LOOM_WORKSPACE or ./loom-work]"


def print_version(ctx: click.Context, _param, value: bool) -> None:
    if value and not ctx.resilient_parsing:
        click.echo(version_line())
        ctx.exit()


@click.group(cls=LoomGroup)
@click.option("--version", is_flag=True, expose_value=False, is_eager=True, callback=print_version,
              help="Print Loom's version (and its git commit when run from a checkout), and exit")
@click.pass_context
def cli(ctx):
    """Loom: curate raw corpora into tokenized Parquet, build mixtures, train on them."""
    if ctx.obj is None:  # no -w before the command; one after it replaces this once it is parsed
        ctx.obj = Workspace.locate(None)


def set_workspace(ctx: click.Context, _param, value: str | None) -> None:
    """-w given to this command or group: the workspace of it and of every group above it."""
    if value is None or ctx.resilient_parsing:
        return
    ws = Workspace.locate(value)
    while ctx is not None:
        ctx.obj = ws
        ctx = ctx.parent


def checks_workspace_first(callback):
    """The callback, run once the command that runs has its workspace, whichever -w came last: a workspace on a
    store is checked first (a command that cannot use one yet, or a refusal, said as one line)."""

    @functools.wraps(callback)
    def checked(*args, **kwargs):
        ctx = click.get_current_context()
        if ctx.invoked_subcommand is None:  # the command that runs (a group's subcommand checks for itself)
            check_workspace(ctx.find_root())
        return callback(*args, **kwargs)

    return checked


def check_workspace(root: click.Context) -> None:
    ws: Workspace = root.obj
    if ws.remote and root.invoked_subcommand not in ON_OBJECT_STORAGE:
        raise UserError(f"`loom {root.invoked_subcommand}` cannot use a workspace on object storage yet "
                        f"({ws.root}): copy it to a local folder (e.g. `aws s3 sync {ws.root} ./ws`) and "
                        "run `loom -w ./ws ...` there")
    check_location(ws)  # a wrong bucket, endpoint or key said once (by LoomGroup), before the command


def accept_workspace_anywhere(command: click.Command) -> None:
    """-w/--workspace on `command` and every command below it."""
    command.params.append(click.Option(["--workspace", "-w"], metavar="DIR", expose_value=False, is_eager=True,
                                       callback=set_workspace, help=WORKSPACE_HELP))
    if command.callback is not None:
        command.callback = checks_workspace_first(command.callback)
    for subcommand in getattr(command, "commands", {}).values():
        accept_workspace_anywhere(subcommand)


mix.mix.add_command(search.search)
mix.mix.add_command(mix_export.export)
mix.mix.add_command(cleanup.mix_rm)
for command in (curate.curate, tokenizer.tokenizer, quality.quality, mix.mix, report.report, publish.publish, sql.sql,
                train.train, ladder.ladder, quickstart.quickstart, reproduce.reproduce, init.init, status.status, show.show,
                cleanup.runs, cleanup.gc, card.card):
    cli.add_command(command)
accept_workspace_anywhere(cli)
