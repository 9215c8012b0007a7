"""The one kind of error a user can cause and fix, and the one line it is shown as."""


class UserError(Exception):
    """A problem the user caused and can fix. Commands print it as one line and exit non-zero."""


EXIT_USER_ERROR = 2
EXIT_INTERRUPTED = 130  # what a shell reports for a command stopped by Ctrl-C (128 + SIGINT)
INTERRUPTED = "interrupted; run the same command again to resume"


def reject_unknown_keys(table: dict, known, where: str) -> None:
    """A config table may hold only the keys its loader knows; the first unknown one is named."""
    unknown = set(table) - set(known)
    if unknown:
        raise UserError(f"{where}: unknown key '{sorted(unknown)[0]}'; known keys are {', '.join(sorted(known))}")


def error_line(err: Exception | str) -> str:
    return f"error: {err}"
