"""`Workspace.status`: what a workspace holds, from its small files (`loom status`): the published curation
(whether it is a sample, whether sources.toml changed since), each mixture and whether it is compiled on the
published data, each run, ladder and search."""

import json
import time
import tomllib

from base.workspace import Generation, SPEC_GLOB, Workspace

MIXTURE_STATES = {"yes": "current", "no": "not compiled"}  # and mixtures.STALE as it is


def status(ws) -> dict:
    """{"workspace", "exists", "curation" (None before the first curate), "next_step" (what to run first, where
    nothing is curated), "mixtures", "runs", "sweeps"}: lists of dicts, times in seconds since the epoch."""
    files: Workspace = ws.files
    if not files.root.is_dir():
        return {"workspace": str(files.root), "exists": False, "curation": None,
                "next_step": "`loom init` starts one (or `loom quickstart` curates the bundled sample corpora)",
                "mixtures": [], "runs": [], "sweeps": []}
    curated = curation_state(files)
    return {"workspace": str(files.root), "exists": True, "curation": curated,
            "next_step": None if curated else first_steps(files), "mixtures": mixture_states(files),
            "runs": run_states(files), "sweeps": sweep_states(files)}


def curation_state(files: Workspace) -> dict | None:
    from curation.manifest import source_summary

    gen = files.published()
    if not gen.manifest_table("shards").exists():
        return None
    published = published_at(files, gen)
    info = json.loads(gen.curation_info.read_text(encoding="utf-8"))
    return {"generation": gen.id, "published": published, "limit": info.get("limit"),
            "sources": [{key: row[key] for key in ("source", "docs_in", "kept", "tokens")}
                        for row in source_summary(gen)],
            "sources_change": sources_change(files, info, published)}


def first_steps(files: Workspace) -> str:
    if not files.sources_file.exists():
        return "`loom init` writes a starter sources.toml (or `loom quickstart` curates the bundled sample corpora)"
    if not files.tokenizer.exists():
        return "`loom tokenizer train`, then `loom curate`"
    return "`loom curate`"


def published_at(files: Workspace, gen: Generation) -> float:
    """When the generation was published: published.json says; a workspace curated before generations has only
    its manifest's modification time."""
    if files.published_file.exists():
        return json.loads(files.published_file.read_text(encoding="utf-8"))["published"]
    return gen.manifest_table("shards").stat().st_mtime


def sources_change(files: Workspace, info: dict, published: float) -> str:
    """Whether sources.toml changed since the published curation, told cheaply: the sources it names against
    those curated (curation.json's `info`), then its modification time against the publication's."""
    if not files.sources_file.exists():
        return f"No sources.toml in {files.root} (this curation was given another file)"
    try:
        config = tomllib.loads(files.sources_file.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as err:
        return f"sources.toml is not valid TOML ({err}); `loom curate` will say where"
    configured = [source.get("name") for source in config.get("source", [])]
    curated = list(info["sources"])
    added = [name for name in configured if name not in curated]
    dropped = [name for name in curated if name not in configured]
    if added or dropped:
        change = "; ".join(part for part in (f"adds {', '.join(map(str, added))}" if added else "",
                                             f"drops {', '.join(dropped)}" if dropped else "") if part)
        return f"sources.toml changed since this curation ({change}): `loom curate` brings the curated data up to date"
    modified = files.sources_file.stat().st_mtime
    if modified > published:
        return (f"sources.toml was modified after this curation (at {when(modified)}): `loom curate` redoes what "
                "changed, and only that (nothing, if nothing did)")
    return "sources.toml: the same sources, not modified since this curation"


def mixture_states(files: Workspace) -> list[dict]:
    """Each compiled mixture (state "current" or mixtures' STALE, its steps, tokens and when compiled), then each
    spec of the workspace not compiled (state "not compiled")."""
    from loom.api.mixtures import build_state
    from mixtures import compiled_mixtures, reading

    compiled = compiled_mixtures(files.mixtures)
    rows = []
    for name in compiled:
        with reading(files.mixture_dir(name)) as build:  # held: a rebuild meanwhile removes no file of it
            meta = json.loads(build.schedule.read_text(encoding="utf-8"))
            state = build_state(files, build)
            rows.append({"mixture": name, "state": MIXTURE_STATES.get(state, state), "steps": meta["steps"],
                         "tokens": meta["tokens"], "compiled_at": build.schedule.stat().st_mtime})
    for name in sorted(p.stem for p in files.mixtures.glob(SPEC_GLOB) if p.stem not in compiled):
        rows.append({"mixture": name, "state": MIXTURE_STATES["no"], "steps": None, "tokens": None,
                     "compiled_at": None})
    return rows


def run_states(files: Workspace) -> list[dict]:
    """reports.index's run summaries, each with `replaced_build`: it trained on a build of its mixture that a
    rebuild replaced (`loom train --resume` refuses it)."""
    from reports.index import run_summaries

    return [{**run, "replaced_build": on_a_replaced_build(files, run)} for run in run_summaries(files)]


def on_a_replaced_build(files: Workspace, run: dict) -> bool:
    from loom.api.mixtures import build_fingerprint
    from trainer.metrics import SCHEDULE_FINGERPRINT, read_run

    now = build_fingerprint(files.mixture_dir(run["mixture"])) if run["mixture"] else None
    return now is not None and read_run(run["dir"]).get(SCHEDULE_FINGERPRINT) not in (None, now)


def sweep_states(files: Workspace) -> list[dict]:
    from reports.index import SWEEPS
    from reports.index import sweep_states as states_of

    return [dict(zip(("kind", "name", "mixture", "state"), (sweep.one, *state)))
            for kind, sweep in SWEEPS.items() for state in states_of(files, kind)]


def when(seconds: float | None) -> str:
    """A time as Loom's commands write it: `2026-12-06 08:15`, local; "" for none."""
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(seconds)) if seconds else ""
