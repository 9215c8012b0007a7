"""The one kind of error a user can cause and fix, and the one line it is shown as."""


class UserError(Exception):
    """A problem the user caused and can fix. Commands print it as one line and exit non-zero."""


EXIT_USER_ERROR = 2


def error_line(err: Exception | str) -> str:
    return f"error: {err}"
