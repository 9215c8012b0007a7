class UserError(Exception):
    """A problem the user caused and can fix. The CLI prints it as one line and exits non-zero."""
