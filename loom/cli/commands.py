"""The `loom` command: the group and its workspace option here, each command group in a module of its own."""

import click

from loom.cli import curate, ladder, mix, quality, quickstart, report, search, sql, tokenizer, train
from loom.cli.console import LoomGroup
from loom.errors import UserError
from loom.io import check_reachable
from loom.workspace import Workspace

# the commands that can use a workspace on s3:// (and other stores) today
ON_OBJECT_STORAGE = ("curate", "tokenizer", "mix", "sql", "report", "train")


@click.group(cls=LoomGroup)
@click.option("--workspace", "-w", metavar="DIR",
              help="Workspace folder, or a URL such as s3://bucket/prefix [default: $LOOM_WORKSPACE or ./loom-work]")
@click.pass_context
def cli(ctx, workspace):
    """Loom: curate raw corpora into tokenized Parquet, build mixtures, train on them."""
    ctx.obj = Workspace.locate(workspace)
    if not ctx.obj.remote:
        return
    if ctx.invoked_subcommand not in ON_OBJECT_STORAGE:
        raise UserError(f"`loom {ctx.invoked_subcommand}` cannot use a workspace on object storage yet "
                        f"({ctx.obj.root}): copy it to a local folder (e.g. `aws s3 sync {ctx.obj.root} ./ws`) and "
                        "run `loom -w ./ws ...` there")
    check_reachable(ctx.obj.root)  # a wrong bucket, endpoint or key said once (by LoomGroup), before the command


mix.mix.add_command(search.search)
for command in (curate.curate, tokenizer.tokenizer, quality.quality, mix.mix, report.report, sql.sql, train.train,
                ladder.ladder, quickstart.quickstart):
    cli.add_command(command)


def main(argv: list[str] | None = None) -> None:
    cli.main(args=argv, prog_name="loom")
