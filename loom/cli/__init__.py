"""The `loom` command's entry point. The commands (loom.cli.commands) are imported inside its Ctrl-C handling:
a Ctrl-C while Python is still importing them is the same one line and exit status 130 as one later."""

import sys

from base.errors import EXIT_INTERRUPTED, INTERRUPTED
from base.procs import die_with_parent, exit_without_collecting


def main(argv: list[str] | None = None) -> None:
    die_with_parent()  # a `loom train` that a ladder or a search started ends with it
    exit_without_collecting()
    try:
        from loom.cli.commands import cli

        cli.main(args=argv, prog_name="loom")
    except KeyboardInterrupt:
        print(INTERRUPTED, file=sys.stderr)
        sys.exit(EXIT_INTERRUPTED)
