"""`Workspace.reproduce(run)` (`loom reproduce RUN`): a run made again from its folder alone (its inputs.json,
trainer.recorded_inputs) into this workspace, new or empty: the recorded inputs checked (nothing is rebuilt when one
differs), the curation run with the recorded sources.toml and models, the mixture built from the recorded spec, the
run trained with the recorded options and seed, and its losses compared with the recorded run's. A reproduction
stopped part way goes on when run again: each step skips what it finished."""

import json
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

from base.atomic_files import atomic_path, write_text
from base.errors import UserError
from base.small_files import read_text
from base.workspace import Workspace
from curation.inputs_record import LIMIT, PATH, QUALITY_MODEL, SOURCES_FILE_KEY, TOKENIZER
from trainer.recorded_inputs import CONFIG, CURATION, EVAL_FILES, MIXTURE, RELATIVE, SPEC, WORLD_SIZE


@dataclass(frozen=True)
class Reproduction:
    """A run made again: its folder, whether its losses are bit-identical to the recorded run's (`comparison`:
    trainer.recorded_inputs.LossComparison), the input differences it went on with (--anyway), and the seconds of
    each step (check, curate, build, train)."""

    run: Path
    recorded: Path
    comparison: object
    differences: tuple[str, ...]
    seconds: dict

    @property
    def identical(self) -> bool:
        return self.comparison.identical and not self.differences


def reproduce(ws, run, workers: int | None = None, anyway: bool = False, log=None, progress=None) -> Reproduction:
    """Makes run folder `run` again in this workspace (new or empty, or one this run's reproduction began). `log(line)`
    hears a line per step and the trainer's lines; progress(stage, total) -> advance(n) counts the inputs checked
    (stage `check inputs`) and each curation stage's shards.
    Differing inputs raise a UserError before any compute unless `anyway`."""
    from trainer.recorded_inputs import input_differences, read_run_inputs, recorded_files

    log = log or ws.note
    recorded = Path(run).resolve()
    record = read_run_inputs(recorded)
    config = recorded_config(ws, record)  # a cooldown's run refused here, before anything is checked or written
    check_target(ws.files, recorded)
    files = recorded_files(record)
    advance = progress("check inputs", len(files)) if progress else lambda n=1: None
    differences, seconds = timed("check", lambda: input_differences(record, advance), {})
    log(f"checked {len(files) + 1} recorded inputs of {recorded}: {len(differences) or 'none'} differ")
    for line in differences:
        log(line)
    if differences and not anyway:
        raise UserError(f"{len(differences)} of run {recorded.name}'s inputs differ from its record (listed above); "
                        "nothing was rebuilt: restore them, or pass --anyway to rebuild with them as they are now")
    write_text(json.dumps({"run": str(recorded)}), ws.files.reproduce_file)
    timed("curate", lambda: curate_as_recorded(ws, record, workers, progress), seconds)
    log(f"curated with {record[CURATION][SOURCES_FILE_KEY]} in {seconds['curate']:.1f} s")
    timed("build", lambda: build_as_recorded(ws, record), seconds)
    log(f"built mixture '{record[MIXTURE]}' from the recorded spec in {seconds['build']:.1f} s")
    timed("train", lambda: train_as_recorded(ws, config, record, log), seconds)
    log(f"trained run '{config.name}' in {seconds['train']:.1f} s")
    return Reproduction(run=config.run_dir, recorded=recorded, comparison=compared(recorded, config.run_dir),
                        differences=tuple(differences), seconds=seconds)


def timed(name: str, step, seconds: dict):
    """What `step()` returns, and `seconds`, where `name` now holds the seconds it took."""
    began = time.perf_counter()
    result = step()
    seconds[name] = time.perf_counter() - began
    return result, seconds


def check_target(files: Workspace, recorded: Path) -> None:
    """The workspace reproduced into: a new or empty local folder, or one this run's reproduction began (it goes on);
    never the recorded run's own workspace."""
    if files.remote:
        raise UserError(f"`loom reproduce` makes a local workspace; give -w a new local folder, not {files.root}")
    root = Path(files.root)
    if root.exists() and not root.is_dir():
        raise UserError(f"{root} is a file; give -w a new or empty folder to reproduce run {recorded.name} into")
    if not root.exists() or not any(root.iterdir()):
        return
    marked = files.reproduce_file
    began = json.loads(read_text(marked)).get("run") if marked.is_file() else None
    if began != str(recorded):
        more = f" (it holds the reproduction of {began})" if began else ""
        raise UserError(f"{root} is not empty{more}: reproduce run {recorded.name} into a new or empty folder "
                        f"(`loom reproduce {recorded} -w NEW_FOLDER`)")


def curate_as_recorded(ws, record: dict, workers, progress) -> None:
    """The recorded sources.toml curated (its relative paths resolve from its folder, as before) with the recorded
    tokenizer and quality model, copied into this workspace's models/."""
    curation = record[CURATION]
    named = recorded_spec(record).get("tokenizer")  # where the spec names it (inside the workspace), else models/
    tokenizer = place(curation[TOKENIZER][PATH], ws.files.root / named if named else ws.files.tokenizer)
    model = curation.get(QUALITY_MODEL)
    quality_model = place(model[PATH], ws.files.quality_model) if model else None
    for evals in record[EVAL_FILES]:
        place(evals[PATH], ws.files.root / evals[RELATIVE])
    ws.curate(sources=curation[SOURCES_FILE_KEY], workers=workers, limit=curation.get(LIMIT), tokenizer=tokenizer,
              quality_model=quality_model, progress=progress)


def place(source: str, target: Path) -> Path:
    """A recorded file copied into the workspace (its bytes, not a link: an edit of the original leaves the copy as
    it was checked), unless a copy is there already (a rerun)."""
    if not target.exists():
        with atomic_path(target) as tmp:
            shutil.copyfile(source, tmp)
    return target


def recorded_spec(record: dict) -> dict:
    import tomllib

    return tomllib.loads(record[SPEC])


def build_as_recorded(ws, record: dict) -> None:
    """The recorded spec (as its build resolved it: every default, the steps) as this workspace's own, built."""
    from loom.api.cleanup import spec_path

    write_text(record[SPEC], spec_path(ws.files, record[MIXTURE]))
    ws.mixtures.build(record[MIXTURE])


def recorded_config(ws, record: dict):
    """The recorded trainer options and seed, in this workspace; resumed where a reproduction was stopped (a new
    run's folder starts from scratch all the same)."""
    from trainer.config import TrainConfig

    config = {**record[CONFIG], "workspace": str(ws.files.root), "resume": True}
    if config.get("branch_from"):
        raise UserError(f"run {config.get('run_name')} is a cooldown of run {config['branch_from']}: reproduce "
                        f"{config['branch_from']}, whose cooldowns train with it")
    return TrainConfig.from_json(json.dumps(config))


def train_as_recorded(ws, config, record: dict, log) -> None:
    from loom.api.train import run_training

    run_training(ws, config, nproc=record.get(WORLD_SIZE, 1), log=log)


def compared(recorded: Path, run: Path):
    from trainer.metrics import read_metrics
    from trainer.recorded_inputs import compare_losses

    return compare_losses(read_metrics(recorded), read_metrics(run))
