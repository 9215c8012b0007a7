"""The one kind of error a user can cause and fix, and the one line it is shown as."""


class UserError(Exception):
    """A problem the user caused and can fix. Commands print it as one line and exit non-zero."""


EXIT_USER_ERROR = 2
EXIT_INTERRUPTED = 130  # what a shell reports for a command stopped by Ctrl-C (128 + SIGINT)
INTERRUPTED = "interrupted; run the same command again to resume"


NEAR_MISS = 2  # the most single-character edits at which a name is taken for a typo of another


def reject_unknown_keys(table: dict, known, where: str) -> None:
    """A config table may hold only the keys its loader knows; the first unknown one is named, with the known key it
    is likely a typo of."""
    unknown = set(table) - set(known)
    if unknown:
        key = sorted(unknown)[0]
        raise UserError(f"{where}: unknown key '{key}'{did_you_mean(key, known)}; known keys are "
                        f"{', '.join(sorted(known))}")


def is_whole_number(value) -> bool:
    """An int as a config table holds it, and not a bool (which Python counts as an int)."""
    return isinstance(value, int) and not isinstance(value, bool)


def string_list(value, what: str) -> tuple[str, ...]:
    """A config value that lists strings (one string is a list of one); `what` names it in the error."""
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise UserError(f"{what} must be a list of strings")
    return tuple(value)


def edit_distance(a: str, b: str) -> int:
    """Levenshtein's distance: the fewest insertions, deletions and substitutions that turn `a` into `b`."""
    previous = list(range(len(b) + 1))
    for i, char_a in enumerate(a, 1):
        current = [i]
        for j, char_b in enumerate(b, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (char_a != char_b)))
        previous = current
    return previous[-1]


def near_misses(word: str, choices) -> list[str]:
    """The choices `word` may be a typo of (itself excluded): those within NEAR_MISS edits (and fewer than its length:
    a short word is two edits from most short names), the closest first, then by name; then those it is the start
    of, at least 3 characters (`vim` of `vimhelp`)."""
    others = set(choices) - {word}
    scored = sorted((edit_distance(word, choice), choice) for choice in others)
    near = [choice for distance, choice in scored if distance <= NEAR_MISS and distance < len(word)]
    cut_short = sorted(choice for choice in others if len(word) >= 3 and choice.startswith(word))
    return list(dict.fromkeys(near + cut_short))


def did_you_mean(word: str, choices) -> str:
    """` (did you mean 'X'?)`, X the closest choice within NEAR_MISS edits of `word`, or "" when none is: put right
    after the unknown name."""
    close = near_misses(word, choices)
    return f" (did you mean '{close[0]}'?)" if close else ""


def error_line(err: Exception | str) -> str:
    return f"error: {err}"
