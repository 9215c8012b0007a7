"""The `loom` command: the group and its workspace option here, each command group in a module of its own."""

import click

from loom.cli import curate, mix, quality, quickstart, report, sql, tokenizer, train
from loom.cli.console import LoomGroup
from loom.workspace import Workspace


@click.group(cls=LoomGroup)
@click.option("--workspace", "-w", metavar="DIR", help="Workspace folder [default: $LOOM_WORKSPACE or ./loom-work]")
@click.pass_context
def cli(ctx, workspace):
    """Loom: curate raw corpora into tokenized Parquet, build mixtures, train on them."""
    ctx.obj = Workspace.locate(workspace)


for command in (curate.curate, tokenizer.tokenizer, quality.quality, mix.mix, report.report, sql.sql, train.train,
                quickstart.quickstart):
    cli.add_command(command)


def main(argv: list[str] | None = None) -> None:
    cli.main(args=argv, prog_name="loom")
