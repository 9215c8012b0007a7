"""The mixtures a sweep's runs train on (a ladder's rungs, a search's proxies), compiled before any training, so
that a budget over an epoch cap or a bad key is refused before compute is spent. A mixture already compiled from
the same spec, on the data published now, is kept: a rerun compiles nothing again."""

import json
from contextlib import ExitStack
from pathlib import Path
from typing import Callable

from rich.console import Console

from base.errors import UserError
from base.small_files import read_text
from base.workspace import Workspace
from mixtures import MixtureSpec, build_mixture, current_build, load_spec, reading
from mixtures.compile import check_current
from sweeps.ownership import mark


def compile_all(ws: Workspace, wanted: list[tuple[str, MixtureSpec]], console: Console, note,
                refused: Callable[[str, UserError], str], owner: tuple[str, str] | None = None) -> None:
    """Each (label, spec) compiled into mixtures/SPEC.NAME/ unless it is already; `refused(label, error)` says
    what a refusal means for the sweep, in one line. `owner` (kind, name): the sweep whose mark each mixture and
    its run of the same name get first (sweeps.ownership), so that `loom gc` knows them once the sweep is gone."""
    if owner is not None:
        mark(ws, *owner, [spec.name for _, spec in wanted])
    for label, spec in wanted:
        out = ws.mixture_dir(spec.name)
        if _current(ws, out, spec):
            continue
        try:
            _, meta = build_mixture(spec, ws, note)  # under the mixture's lock, as `loom mix build`
        except UserError as err:
            raise UserError(refused(label, err)) from None
        console.print(f"{label}: mixture '{spec.name}' compiled, {meta['steps']:,} steps")


def _current(ws: Workspace, out: Path, wanted: MixtureSpec) -> bool:
    """Whether the mixture's current build is compiled from this spec, on the data published now."""
    if current_build(out) is None:
        return False
    with ExitStack() as held:
        try:
            build = held.enter_context(reading(out))  # held: a rebuild meanwhile removes no file of it
        except UserError:  # its build is missing: compiled again
            return False
        if not build.spec.exists():
            return False
        try:
            check_current(json.loads(read_text(build.schedule)), ws)
        except UserError:
            return False
        return _compiled_as(load_spec(build.spec)) == _compiled_as(wanted)


def _compiled_as(spec: MixtureSpec) -> tuple:
    """What a mixture is compiled from, however its budget was given (total_tokens or steps). Not its tokenizer:
    check_current has matched the schedule's to the data's, and a spec may only name the data's."""
    return (spec.phases, spec.seq_len, spec.global_batch, spec.seed, spec.max_epochs, spec.target_tokens,
            spec.evals, spec.resolved_steps(), spec.validation_budget())
