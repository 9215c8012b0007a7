"""`torchrun --nproc-per-node N -m trainer --workspace WS --mixture NAME ...`: one rank of a training run."""

from base.procs import die_with_parent

die_with_parent()  # first: torchrun killed (or `loom train` above it) takes every rank, even one importing torch

import importlib  # noqa: E402
import os  # noqa: E402
from contextlib import nullcontext  # noqa: E402

import click  # noqa: E402

from base.errors import EXIT_INTERRUPTED, EXIT_USER_ERROR, UserError, error_line  # noqa: E402
from base.storage_errors import storage_errors  # noqa: E402
from base.workspace import Workspace  # noqa: E402
from trainer.distributed import exit_rank  # noqa: E402
from trainer.launch import MIXTURE_BUILD, RUN_LOCK_HELD, run_lock  # noqa: E402
from trainer.loop import train  # noqa: E402
from trainer.options import config_from_options, train_options  # noqa: E402

# The reports package sits above the trainer (imports flow loom.cli -> reports -> trainer), so the trainer never
# imports it; this entry point looks it up by name, so a run started by torchrun still writes its live report.
REPORT_HOOK = ("reports.run", "run_report")


def report_hook():
    try:
        return getattr(importlib.import_module(REPORT_HOOK[0]), REPORT_HOOK[1])
    except ImportError:
        return None


@click.command()
@click.option("--workspace", "-w", required=True, metavar="DIR",
              help="The Loom workspace: a folder, or a URL such as s3://bucket/prefix")
@train_options
def main(workspace, **options):
    try:
        root = Workspace.locate(workspace).root
        config = config_from_options(root, options)
        first_rank = os.environ.get("RANK", "0") == "0"  # started by torchrun directly, rank 0 holds the lock
        takes_lock = first_rank and not os.environ.get(RUN_LOCK_HELD)
        with storage_errors(root), run_lock(config) if takes_lock else nullcontext():
            train(config, report=report_hook(), build_id=os.environ.get(MIXTURE_BUILD))
    except UserError as err:
        click.echo(error_line(err), err=True)
        exit_rank(EXIT_USER_ERROR)
    except KeyboardInterrupt:  # Ctrl-C reaches every rank: the run is marked, `loom train` says the one line
        exit_rank(EXIT_INTERRUPTED)
    exit_rank(0)


if __name__ == "__main__":
    main()
