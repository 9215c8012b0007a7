"""What every command shares: the rich console it prints to, and a UserError raised anywhere below a command
shown as one line on stderr, with exit status 2."""

import sys

import click
from rich.console import Console

from loom.errors import EXIT_USER_ERROR, UserError, error_line

console = Console(width=None if sys.stdout.isatty() else 150)


class UserFacingError(click.ClickException):
    exit_code = EXIT_USER_ERROR

    def show(self, file=None):
        click.echo(error_line(self.message), err=True)


class LoomGroup(click.Group):
    """Turns a UserError anywhere below into one line on stderr and exit status 2."""

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except UserError as err:
            raise UserFacingError(str(err)) from None
