"""What a run was made from, recorded in its folder (inputs.json) when it starts, so that the folder alone says how
to make it again (`loom reproduce`): its curation's record (curation.inputs_record: the sources.toml, each input
file's size and SHA-256, the tokenizer and quality model), the mixture's spec as its build resolved it, the build,
the eval files the spec reads, and the trainer's options and seed. Also what reproducing checks with it: which
recorded files still match, and whether two runs' losses are bit-identical. A manifest: no data."""

import json
from dataclasses import dataclass
from pathlib import Path

from base.atomic_files import write_text
from base.digests import file_digest
from base.errors import UserError
from base.inputs import expand_glob, file_size
from base.small_files import read_text
from base.store import as_path
from base.workspace import INPUTS_FILE, Workspace
from curation.inputs_record import (FILES, PATH, QUALITY_MODEL, SHA256, SIZE, SOURCES_FILE_KEY, SOURCES_SHA256,
                                    TOKENIZER, file_record, sources_digest)
from trainer import metrics

CURATION, GENERATION, MIXTURE, BUILD, SPEC, EVAL_FILES, CONFIG, WORLD_SIZE = (
    "curation", "generation", "mixture", "build", "spec", "eval_files", "config", "world_size")
RELATIVE = "relative"  # an eval file's path relative to the workspace, where the spec names it


def record_run_inputs(run, world_size: int) -> None:
    """The run's inputs.json, written by the main rank as the run starts (`run`: trainer.loop.Run)."""
    from mixtures import load_spec

    ws = Workspace(as_path(run.config.workspace))
    generation = ws.generation(run.schedule.meta.get("generation", ""))  # "": a build from before generations
    curation = json.loads(read_text(generation.inputs_record)) if generation.inputs_record.exists() else None
    evals = [e.path for e in load_spec(run.build.spec).evals if e.path]
    record = {GENERATION: generation.id, CURATION: curation, MIXTURE: run.config.mixture, BUILD: run.build.id,
              SPEC: read_text(run.build.spec), EVAL_FILES: eval_file_records(ws, evals),
              CONFIG: json.loads(run.config.to_json()), WORLD_SIZE: world_size}
    write_text(json.dumps(record, indent=2), run.config.run_dir / INPUTS_FILE)


def eval_file_records(ws: Workspace, patterns: list[str]) -> list[dict]:
    """The files the spec's [eval] sets read (globs relative to the workspace), each with its path there."""
    root = str(ws.root).rstrip("/") + "/"
    return [{**file_record(f), RELATIVE: str(f)[len(root):]}
            for pattern in patterns for f in expand_glob(str(ws.root / pattern))]


def read_run_inputs(run_dir: Path) -> dict:
    """A run folder's inputs.json; one line where the folder is not a run's or was trained before runs recorded
    their inputs."""
    run_dir = as_path(run_dir)
    if not (run_dir / metrics.RUN_FILE).is_file():
        raise UserError(f"{run_dir} is not a run's folder (no {metrics.RUN_FILE}); give the path of one, "
                        "such as WORKSPACE/runs/NAME")
    if not (run_dir / INPUTS_FILE).is_file():
        raise UserError(f"run {run_dir} has no {INPUTS_FILE}: it was trained before Loom recorded a run's inputs; "
                        "train it again to make it reproducible")
    if (status := metrics.run_status(run_dir)) not in (metrics.FINISHED, metrics.STOPPED):
        raise UserError(f"run {run_dir.name} is {status}, not finished: its losses are not all there to compare; "
                        "finish it first (`loom train --resume`), then reproduce it")
    record = json.loads(read_text(run_dir / INPUTS_FILE))
    if record.get(CURATION) is None:
        raise UserError(f"run {run_dir} trained on a curation that recorded no {INPUTS_FILE} (curated by an older "
                        "Loom); curate again (`loom curate`), rebuild the mixture and train again to reproduce it")
    return record


def recorded_files(record: dict) -> list[dict]:
    """Every file the record names, each once: inputs, eval files, the tokenizer and the quality model."""
    curation = record[CURATION]
    files = [*curation[FILES], curation[TOKENIZER], *record[EVAL_FILES]]
    if curation.get(QUALITY_MODEL):
        files.append(curation[QUALITY_MODEL])
    return list({f[PATH]: f for f in files}.values())


def input_differences(record: dict, advance=lambda n=1: None) -> list[str]:
    """One line per recorded input that differs now: `missing: PATH`, or `changed: PATH (...)` by its size (no need
    to read it) or its SHA-256, the sources.toml's text included. Empty when every input matches. `advance()` is
    called as each file is checked (the inputs of a large corpus take a while to digest)."""
    lines = []
    sources = as_path(record[CURATION][SOURCES_FILE_KEY])
    if not sources.is_file():
        lines.append(f"missing: {sources}")
    elif sources_digest(read_text(sources)) != record[CURATION][SOURCES_SHA256]:
        lines.append(f"changed: {sources} (its text is not the recorded sources.toml's)")
    for recorded in recorded_files(record):
        if line := file_difference(recorded):
            lines.append(line)
        advance()
    return lines


def file_difference(recorded: dict) -> str | None:
    path = as_path(recorded[PATH])
    if not path.is_file():
        return f"missing: {recorded[PATH]}"
    if (size := file_size(path)) != recorded[SIZE]:
        return f"changed: {recorded[PATH]} ({recorded[SIZE]:,} bytes recorded, {size:,} now)"
    if (now := file_digest(path, length=64)) != recorded[SHA256]:
        return f"changed: {recorded[PATH]} (sha256 {recorded[SHA256][:12]}… recorded, {now[:12]}… now)"
    return None


# ---- losses compared ----

@dataclass(frozen=True)
class LossComparison:
    """Whether two runs' losses are bit-identical: `steps` compared; `line` says so, or where they first differ."""

    identical: bool
    steps: int
    line: str


COMPARED = (metrics.LOSS, metrics.VAL_LOSS, metrics.VAL_LOSS_BY_SOURCE, metrics.EVAL_LOSS_BY_SET)


def compare_losses(recorded: list[dict], new: list[dict]) -> LossComparison:
    """The train loss of every step and each evaluation's losses (validation per source, eval sets), compared
    exactly: floats as the runs wrote them."""
    for old, now in zip(recorded, new):
        for key in COMPARED:
            if old.get(key) != now.get(key):
                return LossComparison(False, old[metrics.STEP], difference(old[metrics.STEP], key, old.get(key),
                                                                             now.get(key)))
    if len(recorded) != len(new):
        return LossComparison(False, min(len(recorded), len(new)),
                              f"the new run has {len(new)} steps, the recorded run {len(recorded)}; the steps both "
                              "have are bit-identical")
    evaluated = [r for r in recorded if metrics.VAL_LOSS in r]
    last = recorded[-1] if recorded else {}
    val = f", val loss {evaluated[-1][metrics.VAL_LOSS]:.6f} ({len(evaluated)} evaluations)" if evaluated else ""
    loss = f", loss {last[metrics.LOSS]:.6f} at step {last[metrics.STEP] + 1}" if last else ""
    return LossComparison(True, len(recorded), f"bit-identical: {len(recorded)} steps{loss}{val}")


def difference(step: int, key: str, old, now) -> str:
    """Where two runs first differ, and by how much when both are numbers."""
    if isinstance(old, float) and isinstance(now, float):
        return f"differs at step {step + 1}: {key} {old!r} recorded, {now!r} now ({now - old:+.3g})"
    return f"differs at step {step + 1}: {key} {json.dumps(old)} recorded, {json.dumps(now)} now"
