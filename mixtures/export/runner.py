"""`loom mix export`: a compiled mixture's training sequences, in schedule order, written in a format another
trainer reads. Step by step, each step's global batch in `Schedule.batch` order, each sequence the seq_len + 1
tokens `SequenceReader.read` gives: a trainer reading the export front to back sees what `loom train` would.

The export streams a chunk of steps at a time (about CHUNK_TOKENS tokens; never the whole mixture in memory),
each chunk read while the one before it is written on a writer thread. After each chunk is on disk, progress.json
records how far the files go; a killed export rerun cuts its files back to that record and goes on, ending byte
for byte as an uninterrupted one. Memory: two chunks (32 MB each at most, as int32), the curated row groups kept
between chunks (CACHE_BYTES, 256 MB, decoded, and the four read ahead).
export.json, written last, says what the export is (the same fields for every format) and that it is finished:
a rerun with the same schedule fingerprint does nothing; a mixture rebuilt since starts the export again. The
export reads one build of the mixture, held while it runs (mixtures.builds), so a rebuild meanwhile changes nothing
it reads."""

import json
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator

import numpy as np

from base.atomic_files import TEMPORARY_GLOB, remove_temporary_files, write_text
from base.errors import UserError
from base.lock import exclusive
from base.names import check_name
from base.store import path_text
from base.workspace import EXPORT_FILE, EXPORT_PROGRESS_FILE, EXPORTS_DIR, Generation, Workspace, export_lock
from curation.tokenizer import load_tokenizer
from mixtures import (Build, RowGroupCache, Schedule, SequenceReader, current_build, load_schedule, load_spec,
                      mixture_tokenizer, reading, schedule_fingerprint)
from mixtures.export.formats import FORMATS
from mixtures.export.writer import FormatWriter
from mixtures.licenses import exported_licenses

CHUNK_TOKENS = 1 << 23  # tokens per chunk: the unit of resuming, of a Parquet part, and of memory (<= 32 MB)
CACHE_BYTES = 1 << 28  # curated row groups kept between chunks (decoded): an export of less data reads it once
BATCH_WINDOW = 1 << 20  # sequences whose places in the data are found at once (two int64 each: 16 MB)


@dataclass(frozen=True)
class ExportPlan:
    """An export made concrete and checked: where it goes, which steps, and what its sidecar will say."""
    out: Path
    workspace: Path
    mixture_dir: Path
    build: Build  # the mixture's build the export reads, every file of it; held while the export runs
    schedule: Schedule = field(repr=False)
    data: Generation
    info: dict  # export.json

    @property
    def steps(self) -> range:
        return range(self.info["steps"]["start"], self.info["steps"]["end"])

    @property
    def lock_target(self) -> str:
        """The lock's name in WORKSPACE/locks/: one per output folder."""
        return export_lock(str(self.out.relative_to(self.workspace)).replace("/", "+"))


@dataclass
class ExportResult:
    out: Path
    files: list[tuple[str, int]]  # (name, bytes), export.json last
    sequences: int
    tokens: int
    finished_already: bool = False  # a rerun of a finished export: nothing was written
    resumed_at: int | None = None  # the step a killed export went on from


def plan_export(ws: Workspace, name: str, fmt: str, phase: str | None = None, out: str | None = None,
                chunk_steps: int | None = None) -> ExportPlan:
    """Every check before anything is written: the format, the workspace, the mixture, the phase, the output folder."""
    check_name("mixture", name)
    if fmt not in FORMATS:
        raise UserError(f"unknown export format '{fmt}'; use one of {', '.join(FORMATS)}")
    if ws.remote:
        raise UserError(f"`loom mix export` writes to a local workspace only ({ws.root} is on a store); copy it to a "
                        "local folder and export there")
    folder = ws.mixture_dir(name)
    build = current_build(folder)
    if build is None:
        raise UserError(f"mixture '{name}' is not compiled in {ws.root}; run `loom mix build {name}` first")
    try:
        schedule, data = load_schedule(build.root, ws)
    except FileNotFoundError as err:
        raise UserError(f"cannot read the curated data of mixture '{name}': {err}; run `loom curate` and "
                        f"`loom mix build {name}` again") from None
    start, end = phase_steps(schedule, phase)
    target = output_folder(ws, name, fmt, phase, out)
    width = schedule.meta["seq_len"] + 1
    steps_per_chunk = chunk_steps or max(1, CHUNK_TOKENS // (schedule.global_batch * width))
    info = sidecar(schedule, fmt, start, end, steps_per_chunk, eos_id(ws, build))
    info["provenance"] = exported_licenses(build.root, data, sorted({s for c in schedule.meta["components"]
                                                                     for s in c["sources"]}),
                                           [p["name"] for p in info["phases"]])
    check_holds_only_an_export(target, writer_for(fmt, target, info))
    return ExportPlan(target, Path(ws.root).resolve(), folder, build, schedule, data, info)


def phase_steps(schedule: Schedule, phase: str | None) -> tuple[int, int]:
    if phase is None:
        return 0, schedule.steps
    found = next((p for p in schedule.phases if p.name == phase), None)
    if found is None:
        names = ", ".join(p.name for p in schedule.phases)
        raise UserError(f"mixture '{schedule.meta['name']}' has no phase '{phase}'; its phases are {names}")
    return found.start_step, found.end_step


def output_folder(ws: Workspace, name: str, fmt: str, phase: str | None, out: str | None) -> Path:
    """WORKSPACE/exports/NAME/FORMAT[-PHASE], or --out, which must lead to a folder inside the workspace."""
    root = Path(ws.root).resolve()
    if out is None:
        return ws.export_dir(name).resolve() / (fmt + (f"-{phase}" if phase else ""))
    folder = Path(out).expanduser().resolve()  # a symbolic link is followed, to a folder that must be inside too
    if not folder.is_relative_to(root):
        raise UserError(f"--out {out} leads outside the workspace {root} (Loom writes only inside it); name a folder "
                        f"in it, e.g. {root / EXPORTS_DIR / name / fmt}")
    if folder.exists() and not folder.is_dir():
        raise UserError(f"--out {out} is a file, not a folder; name a folder (an export is several files)")
    return folder


def check_holds_only_an_export(folder: Path, writer: FormatWriter) -> None:
    """A folder an export restarts in loses its export files: refuse one that holds anything else."""
    if not folder.is_dir():
        return
    others = sorted(p.name for p in folder.iterdir()
                    if not (writer.owns(p.name) or p.name in (EXPORT_FILE, EXPORT_PROGRESS_FILE)
                            or p.match(TEMPORARY_GLOB)))
    if others:
        raise UserError(f"{folder} holds other files than a {writer.name} export ({', '.join(others[:3])}); name an "
                        "empty folder, or the folder of a former export, with --out")
    for name in [*writer.files(), EXPORT_FILE, EXPORT_PROGRESS_FILE]:
        if (folder / name).is_symlink() or ((folder / name).exists() and not (folder / name).is_file()):
            raise UserError(f"{folder / name} is not a file an export wrote (a symbolic link or a special file), "
                            "so the export leaves it alone; remove it, or name another folder with --out")


def eos_id(ws: Workspace, build: Build) -> int:
    """The end-of-sequence id of the tokenizer the mixture was built with (the spec's, as resolved)."""
    return load_tokenizer(path_text(mixture_tokenizer(load_spec(build.spec), ws)))[1]


def sidecar(schedule: Schedule, fmt: str, start: int, end: int, chunk_steps: int, eos: int) -> dict:
    """export.json: what the export is, the same fields for every format."""
    meta = schedule.meta
    width = meta["seq_len"] + 1
    sequences = (end - start) * schedule.global_batch
    phases = [{"name": p.name, "start_step": max(p.start_step, start), "end_step": min(p.end_step, end)}
              for p in schedule.phases if p.start_step < end and p.end_step > start]
    return {"mixture": meta["name"], "format": fmt, "dtype": FORMATS[fmt].dtype(meta["vocab_size"]).name,
            "seq_len": meta["seq_len"], "tokens_per_sequence": width, "global_batch": schedule.global_batch,
            "steps": {"start": start, "end": end}, "sequences": sequences, "tokens": sequences * width,
            "eos_id": eos, "vocab_size": meta["vocab_size"], "schedule_fingerprint": schedule_fingerprint(meta),
            "phases": phases, "chunk_steps": chunk_steps,
            "order": "step by step from steps.start; each step's global batch in the schedule's order; each sequence "
                     "tokens_per_sequence ids (inputs are the first seq_len, targets the last seq_len)"}


def writer_for(fmt: str, folder: Path, info: dict) -> FormatWriter:
    return FORMATS[fmt].writer(folder, np.dtype(info["dtype"]), info["tokens_per_sequence"])


def run_export(plan: ExportPlan, on_chunk: Callable[[int, int], None] = lambda steps, tokens: None,
               note: Callable[[str], None] = lambda line: None) -> ExportResult:
    """Writes the export, holding its lock (`plan.lock_target`); `on_chunk(steps, tokens)` is told the totals done
    after each chunk. The plan's build of the mixture is held meanwhile: a rebuild neither changes nor removes it."""
    lock = Workspace(plan.workspace).lock_file(plan.lock_target)
    with exclusive(lock, f"the export {plan.out}", note), reading(plan.mixture_dir, plan.build.id):
        return _run_export(plan, on_chunk, note)


def _run_export(plan: ExportPlan, on_chunk: Callable[[int, int], None], note: Callable[[str], None]) -> ExportResult:
    info, out = plan.info, plan.out
    writer = writer_for(info["format"], out, info)
    if is_finished(plan):
        (out / EXPORT_PROGRESS_FILE).unlink(missing_ok=True)  # killed between its sidecar and this file's removal
        return ExportResult(out, listing(out, writer), info["sequences"], info["tokens"], finished_already=True)
    out.mkdir(parents=True, exist_ok=True)
    remove_temporary_files(out)
    progress = read_json(out / EXPORT_PROGRESS_FILE)
    resumable = progress if progress and progress.get("export") == info else None
    if resumable is None:
        start_afresh(out, writer, read_json(out / EXPORT_FILE) or (progress or {}).get("export"), info, note)
    writer.resume(resumable and resumable["writer"])
    first = resumable["next_step"] if resumable else plan.steps.start
    write_chunks(plan, writer, first, on_chunk)
    writer.finish(info["sequences"])
    write_text(json.dumps(info, indent=2), out / EXPORT_FILE)
    (out / EXPORT_PROGRESS_FILE).unlink()
    return ExportResult(out, listing(out, writer), info["sequences"], info["tokens"],
                        resumed_at=first if resumable else None)


def is_finished(plan: ExportPlan) -> bool:
    """export.json says this very export, and the files it lists are there."""
    writer = writer_for(plan.info["format"], plan.out, plan.info)
    return read_json(plan.out / EXPORT_FILE) == plan.info and all((plan.out / name).is_file()
                                                                  for name in writer.files())


def start_afresh(out: Path, writer: FormatWriter, former: dict | None, info: dict,
                 note: Callable[[str], None]) -> None:
    """A former export's files removed: one of another build of the mixture or other settings, or one killed
    before its first chunk was recorded."""
    if former:
        why = ("another build of the mixture" if former.get("schedule_fingerprint") != info["schedule_fingerprint"]
               else "other settings")
        note(f"{out} held an export of {why}; exporting again from the first step")
    writer.clear()
    for name in (EXPORT_FILE, EXPORT_PROGRESS_FILE):
        (out / name).unlink(missing_ok=True)


def write_chunks(plan: ExportPlan, writer: FormatWriter, first: int, on_chunk: Callable[[int, int], None]) -> None:
    """Chunk after chunk from step `first`: each chunk is read on this thread while the one before it is written
    (and its progress recorded) on a writer thread, which the format's encoding and fsync leave the GIL to. At most
    two chunks are held: the one being written and the one being read. A failed write fails the export when the
    next chunk is read, and nothing after it is written."""
    info, schedule = plan.info, plan.schedule
    sources = sorted({s for c in schedule.meta["components"] for s in c["sources"]})
    cache = RowGroupCache(plan.data.root, capacity=sys.maxsize, max_bytes=CACHE_BYTES)
    reader = SequenceReader(schedule, plan.build.root, plan.data, sources, cache)
    per_step = schedule.global_batch * info["tokens_per_sequence"]

    def write_and_record(start: int, end: int, tokens: np.ndarray) -> None:
        writer.write(start, tokens, np.repeat(np.arange(start, end), schedule.global_batch))
        write_text(json.dumps({"export": info, "next_step": end, "writer": writer.state()}),
                   plan.out / EXPORT_PROGRESS_FILE)
        on_chunk(end - plan.steps.start, (end - plan.steps.start) * per_step)

    on_chunk(first - plan.steps.start, (first - plan.steps.start) * per_step)
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="export-writer") as writing:
        written = None
        for start, end, components, sequences in chunk_batches(schedule, first, plan.steps.stop, info["chunk_steps"]):
            tokens = reader.gather(components, sequences, writer.dtype)
            if written is not None:
                written.result()  # the chunk before is on disk and recorded (or its error is raised here)
            written = writing.submit(write_and_record, start, end, tokens)
        if written is not None:
            written.result()


def chunk_batches(schedule: Schedule, first: int, stop: int, chunk_steps: int) -> Iterator[tuple]:
    """(start, end, components, sequences) of each chunk of steps from `first` to `stop`: its steps, and the
    component and sequence of each of their sequences in schedule order. The schedule is asked for a window of
    chunks at once (BATCH_WINDOW sequences at most), as a call of `Schedule.batches` costs a lot more than its
    length."""
    chunks_a_window = max(1, BATCH_WINDOW // (chunk_steps * schedule.global_batch))
    for window in range(first, stop, chunk_steps * chunks_a_window):
        window_end = min(window + chunk_steps * chunks_a_window, stop)
        components, sequences = schedule.batches(window, window_end)
        for start in range(window, window_end, chunk_steps):
            end = min(start + chunk_steps, window_end)
            rows = slice((start - window) * schedule.global_batch, (end - window) * schedule.global_batch)
            yield start, end, components[rows], sequences[rows]


def read_json(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (FileNotFoundError, json.JSONDecodeError):
        return None


def listing(out: Path, writer: FormatWriter) -> list[tuple[str, int]]:
    return [(name, (out / name).stat().st_size) for name in [*writer.files(), EXPORT_FILE]]
