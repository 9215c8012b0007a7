"""`loom ladder NAME`: a ladder planned from its spec and a mixture, its rungs' mixtures compiled, its rungs
trained, and its fits written, in WORKSPACE/ladders/NAME/ (ladder.toml as resolved, fit.json, points.parquet,
report.html, logs/). One writer per ladder; a rerun with the same spec and mixture resumes it."""

import json
from dataclasses import asdict
from pathlib import Path
from typing import Callable

from rich.console import Console
from tokenizers import Tokenizer

from base.atomic_files import write_text
from base.errors import UserError
from base.inputs import local_file
from base.lock import exclusive
from base.small_files import read_text
from base.workspace import LADDER_SPEC_FILE, LOGS_DIR, Workspace, ladder_lock
from mixtures import MixtureSpec, mixture_tokenizer
from sweeps.compiling import compile_all
from sweeps.ownership import LADDER
from sweeps.plan import LadderPlan, plan_ladder
from sweeps.results import ladder_results, write_results
from sweeps.runner import train_rungs
from sweeps.spec import LadderSpec



def recorded_spec(ws: Workspace, name: str) -> str | None:
    """The spec (preset name or path) a ladder was started with, from its ladder.toml."""
    path = ws.ladder_dir(name) / LADDER_SPEC_FILE
    if not path.exists():
        return None
    for line in read_text(path).splitlines():
        if line.startswith("spec = "):
            return json.loads(line.removeprefix("spec = "))
    return None


def plan(ws: Workspace, name: str, spec: LadderSpec, mixture: MixtureSpec) -> LadderPlan:
    return plan_ladder(spec, name, mixture, vocabulary(ws, mixture))


def vocabulary(ws: Workspace, mixture: MixtureSpec) -> int:
    """The size of the vocabulary of the mixture's tokenizer: the models' embedding and output head."""
    tokenizer = mixture_tokenizer(mixture, ws)
    return Tokenizer.from_file(str(local_file(tokenizer))).get_vocab_size()


def run_ladder(ws: Workspace, ladder: LadderPlan, spec: LadderSpec, mixture: MixtureSpec, spec_source: str,
               parallel: int, nproc: int, console: Console, note, report: Callable[[Path], object]) -> dict:
    """Trains the ladder's unfinished rungs and writes its results, and `report(folder)`, as each rung ends."""
    folder = ws.ladder_dir(ladder.name)
    with exclusive(ws.lock_file(ladder_lock(ladder.name)), f"ladder '{ladder.name}' in {ws.root}", note):
        resolved = resolved_toml(ladder, spec, spec_source)
        started = folder / LADDER_SPEC_FILE
        if started.exists() and read_text(started) != resolved:
            raise UserError(f"ladder '{ladder.name}' was started with another spec or mixture (see {started}); "
                            "rerun it with the same --spec and --mixture, or give the new ladder another NAME")
        compile_rungs(ws, ladder, mixture, console, note)
        write_text(resolved, started)  # once every rung's mixture compiles: a ladder refused at config starts nothing
        train_rungs(ws.root, ladder, spec.train, folder / LOGS_DIR, parallel, nproc, console,
                    on_finished=lambda: publish(ws, ladder, spec, folder, report))
        return publish(ws, ladder, spec, folder, report)


def publish(ws: Workspace, ladder: LadderPlan, spec: LadderSpec, folder: Path, report) -> dict:
    """fit.json, points.parquet and the report from the rungs finished so far."""
    results = ladder_results(ws.root, ladder, spec.fit)
    write_results(folder, results)
    report(folder)
    return results


def compile_rungs(ws: Workspace, ladder: LadderPlan, mixture: MixtureSpec, console: Console, note) -> None:
    """Each rung's mixture, compiled unless it is already, on the data published now."""
    def refused(label: str, err: UserError) -> str:
        hint = (f"; a rung reads each component as often as the target's {ladder.target.tokens:,} tokens "
                "would, so lower the target's tokens (or tokens_per_parameter) or raise the mixture's "
                "max_epochs") if "max_epochs" in str(err) else ""
        return f"ladder '{ladder.name}', {label}: {err}{hint}"

    compile_all(ws, [(f"rung {r.rung}", ladder.rung_mixture(mixture, r)) for r in ladder.rungs], console, note,
                refused, owner=(LADDER, ladder.name))


def resolved_toml(ladder: LadderPlan, spec: LadderSpec, source: str) -> str:
    """The ladder as planned, every default filled in; a rerun must resolve to the same text to resume it."""
    value = json.dumps  # a JSON scalar is a TOML value
    lines = ["# as resolved by `loom ladder`: every default filled in, each rung's budget and LR as trained", "",
             f"spec = {value(source)}", f"mixture = {value(ladder.mixture)}", f"seq_len = {ladder.seq_len}",
             f"global_batch = {ladder.global_batch}", f"tokens_per_parameter = {value(spec.tokens_per_parameter)}",
             *_pairs({"cooldowns": list(ladder.cooldowns) or None, "decay_fraction": ladder.decay_fraction}),
             "", "[lr]", *_pairs(asdict(spec.lr)), "", "[fit]",
             *_pairs({**asdict(spec.fit), "l_inf": "free" if spec.fit.l_inf is None else spec.fit.l_inf}),
             "", "[train]", *_pairs(spec.train), "", "[target]",
             *_pairs({**(asdict(ladder.target.shape) if ladder.target.shape else {}), "tokens": ladder.target.tokens,
                      "flops": ladder.target.flops, "active_parameters": ladder.target.active_parameters})]
    for rung in ladder.rungs:
        lines += ["", "[[rung]]", *_pairs({
            "name": rung.rung, **asdict(rung.shape), "tokens": rung.tokens, "steps": rung.steps, "lr": rung.lr,
            "warmup_steps": rung.warmup_steps, "active_parameters": rung.active_parameters,
            "tokens_per_parameter": round(rung.tokens_per_parameter, 4), "flops": rung.flops,
            **(_budgets(rung) if rung.cooldown_steps else {})})]
    return "\n".join(lines) + "\n"


def _budgets(rung) -> dict:
    """A rung's budgets as ladder.toml records them: ascending, the rung's own run last."""
    budgets = rung.budgets
    return {"budget_steps": [b.steps for b in budgets], "budget_tokens": [b.tokens for b in budgets],
            "budget_flops": [b.flops for b in budgets], "budget_runs": [b.run for b in budgets],
            "branch_steps": [b.branch_step for b in budgets[:-1]], "decay_fraction": rung.decay_fraction}


def _pairs(values: dict) -> list[str]:
    return [f"{key} = {json.dumps(v)}" for key, v in values.items() if v is not None]
