"""The one rule for names that become folders and keys: sources, mixtures and runs. A name is one path
component that cannot leave the folder it names (no '/', no '..'), so `runs/NAME/` stays inside the workspace."""

import re

from base.errors import UserError

NAME = r"[a-z0-9_-]{1,64}"  # also the first part of a mixture's slice key (`web:lang=de`)
NAME_PATTERN = re.compile(NAME)
NAME_RULE = "1 to 64 lowercase letters, digits, '_' or '-'"


def is_name(value) -> bool:
    return isinstance(value, str) and NAME_PATTERN.fullmatch(value) is not None


def check_name(kind: str, value, where: str = "") -> str:
    """`value` if it is a valid name; otherwise a one-line UserError that says the rule and the fix."""
    if not is_name(value):
        raise UserError(f"{where + ': ' if where else ''}{kind} name {value!r} is invalid: a name is {NAME_RULE}; "
                        f"rename it, e.g. {suggest(value)!r}")
    return value


def suggest(value) -> str:
    """The closest valid name: lowercased, each run of other characters turned into one '-'."""
    text = re.sub(r"[^a-z0-9_]+", "-", str(value).lower()).strip("-")[:64]
    return text or "name"
