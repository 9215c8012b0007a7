"""`Workspace.mixtures`: `build(name)` (`loom mix build`) and `export(name, format)` (`loom mix export`), and
what `loom mix list` and `loom status` ask of a compiled mixture (its state, its build's fingerprint)."""

import dataclasses
from dataclasses import dataclass
from pathlib import Path

from base.errors import UserError
from base.workspace import Workspace, examples_dir

STALE = "stale (curated since)"


@dataclass(frozen=True)
class MixtureBuild:
    """A published build: its plan (one dict per phase and component, as plan.parquet holds it), its schedule's
    meta (steps, tokens, phases, validation, evals, cells, each source's licence), the spec's batch shape, the
    mixture's report, and the tokens it trains per phase and licence (one dict each, as licenses.parquet holds)."""

    mixture: str
    id: str
    folder: Path
    schedule: Path
    plan: list[dict]
    meta: dict
    global_batch: int
    seq_len: int
    target_tokens: int | None
    simulates_epochs: bool
    report: Path
    licenses: list[dict] = dataclasses.field(default_factory=list)

    def plan_table(self):
        """The plan as a pyarrow.Table."""
        import pyarrow as pa

        return pa.Table.from_pylist(self.plan)


@dataclass(frozen=True)
class MixtureExport:
    """A finished export: its folder, files (name, bytes), sequences and tokens, whether it was finished already
    (nothing written) or resumed at a step, and its export.json (`info`)."""

    out: Path
    files: list[tuple[str, int]]
    sequences: int
    tokens: int
    finished_already: bool
    resumed_at: int | None
    info: dict


class Mixtures:
    def __init__(self, ws):
        self.ws = ws

    def build(self, name: str, total_tokens: int | None = None, steps: int | None = None,
              target_tokens: int | None = None) -> MixtureBuild:
        """Compiles mixture `name` (a workspace or built-in mixture, or a spec's path) on the published curation
        into a new build of WORKSPACE/mixtures/NAME/, as `loom mix build` does; the overrides are its options."""
        return build_mixture(self.ws, name, total_tokens, steps, target_tokens)

    def export(self, name: str, format: str, phase: str | None = None, output: str | None = None,
               chunk_steps: int | None = None, progress=None) -> MixtureExport:
        """Writes compiled mixture `name`'s training sequences in schedule order in `format`
        (mixtures.export.formats), as `loom mix export` does; `output` a folder inside the workspace [default:
        WORKSPACE/exports/NAME/FORMAT[-PHASE]]; progress(stage, total) -> advance(n) counts steps. A killed
        export resumes when run again."""
        from mixtures.export import is_finished, plan_export, run_export

        plan = plan_export(self.ws.files, name, format, phase, output, chunk_steps)
        counting = progress is not None and not is_finished(plan)  # a finished export writes nothing to count
        chunks = {"on_chunk": steps_advanced(progress("export", len(plan.steps)))} if counting else {}
        done = run_export(plan, note=self.ws.note, **chunks)
        return MixtureExport(out=done.out, files=done.files, sequences=done.sequences, tokens=done.tokens,
                             finished_already=done.finished_already, resumed_at=done.resumed_at, info=plan.info)


def steps_advanced(advance):
    """An export's on_chunk(steps done, tokens) as advances of a progress bar."""
    done = 0

    def on_chunk(steps: int, _tokens: int) -> None:
        nonlocal done
        advance(steps - done)
        done = steps

    return on_chunk


def builtin_mixtures() -> Path:
    return examples_dir() / "mixtures"


def build_mixture(ws, name: str, total_tokens=None, steps=None, target_tokens=None) -> MixtureBuild:
    from mixtures import build_mixture as compile_and_publish
    from mixtures import find_spec, load_meta, load_spec, read_licenses, read_plan, reading, schedule_fingerprint
    from reports.build import mixture_report

    for option, value in (("total_tokens", total_tokens), ("steps", steps), ("target_tokens", target_tokens)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
            raise UserError(f"{option} {value!r}: give a whole number, 1 or more (`loom mix build NAME "
                            f"--{option.replace('_', '-')} N`), or leave it out for the spec's")
    files: Workspace = ws.files
    spec = load_spec(find_spec(name, files.mixtures, builtin_mixtures()))
    if total_tokens or steps:
        spec = dataclasses.replace(spec, total_tokens=total_tokens, steps=steps)
    if target_tokens:
        spec = dataclasses.replace(spec, target_tokens=target_tokens)
    out = files.mixture_dir(spec.name)
    former = build_fingerprint(out)
    build, meta = compile_and_publish(spec, files, ws.note)  # under the mixture's lock
    with reading(out, build.id) as held:  # no other rebuild removes the build while its plan is read
        plan, meta, licenses = read_plan(held.root), load_meta(held), read_licenses(held.root)
    for line in orphaned_runs(files, spec.name, former, schedule_fingerprint(meta)):
        ws.note(line)
    return MixtureBuild(mixture=spec.name, id=build.id, folder=build.root, schedule=build.schedule, plan=plan,
                        meta=meta, global_batch=spec.global_batch, seq_len=spec.seq_len,
                        target_tokens=spec.target_tokens, simulates_epochs=spec.simulates_epochs(),
                        report=mixture_report(files.root, spec.name), licenses=licenses)


def build_fingerprint(out: Path) -> str | None:
    """The schedule fingerprint of the current build of the mixture in `out` (the one runs record), or None where
    none is compiled."""
    from mixtures import current_schedule, schedule_fingerprint

    meta = current_schedule(out)
    return schedule_fingerprint(meta) if meta is not None else None


def orphaned_runs(files: Workspace, name: str, former: str | None, now: str) -> list[str]:
    """Which runs trained on the build just replaced: `loom train --resume` refuses them on this one."""
    from trainer.metrics import MIXTURE, RUN_FILE, SCHEDULE_FINGERPRINT, read_run

    if former is None or former == now:
        return []
    runs = [r.parent.name for r in sorted(files.runs.glob(f"*/{RUN_FILE}"))
            if (info := read_run(r.parent)).get(MIXTURE) == name and info.get(SCHEDULE_FINGERPRINT) == former]
    if not runs:
        return []
    return [f"runs {', '.join(runs)} trained on the build of mixture '{name}' this one replaces and cannot be "
            "resumed on it (`loom train --resume` refuses them); to keep a build for such runs, build a changed "
            "spec under another name"]


def compiled_state(files: Workspace, name: str) -> str:
    """Whether mixture `name` is compiled: "no", "yes", or STALE, compiled on curated data the workspace no longer
    publishes, which the trainer refuses (the check is mixtures.load_schedule's)."""
    from mixtures import current_build, reading

    if current_build(files.mixture_dir(name)) is None:
        return "no"
    try:
        with reading(files.mixture_dir(name)) as build:  # held: a rebuild meanwhile removes no file of it
            return build_state(files, build)
    except UserError:
        return STALE


def build_state(files: Workspace, build) -> str:
    """"yes" for a build the trainer takes, or STALE."""
    from mixtures import load_schedule

    try:
        load_schedule(build.root, files)
    except UserError:
        return STALE
    return "yes"
