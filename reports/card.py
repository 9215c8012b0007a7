"""`loom card [MIXTURE]`: a data card in Hugging Face's dataset-card layout (a README.md: a YAML header of
licences, languages, size category and task, then Markdown sections), written from the published manifest and,
for a mixture, its current build's plan; no figure in it is written by hand. Without a mixture it describes the
curated data alone (WORKSPACE/generations/G/manifest/README.md); with one, what the mixture trains on
(WORKSPACE/mixtures/NAME/README.md). The header is built by huggingface_hub's DatasetCardData, which nothing here
asks to reach the Hub."""

import re
import shlex
from pathlib import Path

from base.atomic_files import write_text
from base.errors import UserError, did_you_mean
from base.names import check_name
from base.workspace import RUN_FILE, Workspace
from mixtures import compiled_mixtures, load_meta, read_licenses, read_plan, reading
from reports import card_sections as cs
from reports.html import number
from reports.mixture import OUTSIDE_WORKSPACE, source_tokens, tokenizer_shown, tokens_by
from reports.sections import load_json, source_stats
from reports.views import connect, workspace_root

LANGUAGE_SHARE = 0.01  # a language in the header holds at least this share of the kept documents
# Hugging Face's size categories: the upper bound of each (the last has none)
SIZE_CATEGORIES = ((1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K"), (1_000_000, "100K<n<1M"),
                   (10_000_000, "1M<n<10M"), (100_000_000, "10M<n<100M"), (1_000_000_000, "100M<n<1B"),
                   (10_000_000_000, "1B<n<10B"), (100_000_000_000, "10B<n<100B"), (1_000_000_000_000, "100B<n<1T"))
# The licence ids the Hub takes in a card's `license:` (huggingface.co/docs/hub/repositories-licenses); an SPDX id
# is lowercased, its -only/-or-later dropped and a few renamed; any other is "other".
HF_LICENSES = frozenset("""apache-2.0 mit openrail bigscience-openrail-m creativeml-openrail-m bigscience-bloom-rail-1.0
    bigcode-openrail-m afl-3.0 artistic-2.0 bsl-1.0 bsd bsd-2-clause bsd-3-clause bsd-3-clause-clear c-uda cc cc0-1.0
    cc-by-2.0 cc-by-2.5 cc-by-3.0 cc-by-4.0 cc-by-sa-3.0 cc-by-sa-4.0 cc-by-nc-2.0 cc-by-nc-3.0 cc-by-nc-4.0
    cc-by-nd-4.0 cc-by-nc-nd-3.0 cc-by-nc-nd-4.0 cc-by-nc-sa-2.0 cc-by-nc-sa-3.0 cc-by-nc-sa-4.0 cdla-sharing-1.0
    cdla-permissive-1.0 cdla-permissive-2.0 wtfpl ecl-2.0 epl-1.0 epl-2.0 etalab-2.0 eupl-1.1 agpl-3.0 gfdl gpl gpl-2.0
    gpl-3.0 lgpl lgpl-2.1 lgpl-3.0 isc lppl-1.3c ms-pl mpl-2.0 odc-by odbl openrail++ osl-3.0 postgresql ofl-1.1 ncsa
    unlicense zlib pddl lgpl-lr deepfloyd-if-license llama2 gemma unknown other""".split())
SPDX_RENAMED = {"odbl-1.0": "odbl", "odc-by-1.0": "odc-by", "pddl-1.0": "pddl", "gfdl-1.3": "gfdl",
                "gfdl-1.2": "gfdl", "gfdl-1.1": "gfdl"}
TASK_CATEGORIES = ["text-generation"]


def hf_license(spdx: str) -> str:
    """The Hub's id for one SPDX licence id ("unknown" stays unknown; an id the Hub lacks is "other")."""
    lowered = re.sub(r"(-only|-or-later|\+)$", "", spdx.strip().lower())
    lowered = SPDX_RENAMED.get(lowered, lowered)
    return lowered if lowered in HF_LICENSES else "other"


def hf_licenses(expression: str) -> list[str]:
    """The Hub's ids for the licences an SPDX expression names (`GPL-2.0-or-later OR CC-BY-SA-3.0`: both)."""
    return [hf_license(i) for i in licence_ids(expression)] or ["unknown"]


def licence_ids(expression: str) -> list[str]:
    """The licence ids in an SPDX expression, in order (an exception after WITH is no licence)."""
    words = re.findall(r"[^\s()]+", expression)
    return [w for i, w in enumerate(words) if w.upper() not in ("AND", "OR", "WITH")
            and (i == 0 or words[i - 1].upper() != "WITH")]


def size_category(documents: int) -> str:
    return next((name for bound, name in SIZE_CATEGORIES if documents < bound), "n>1T")


def card_path(ws: Workspace, mixture: str | None) -> Path:
    """Where `loom card [MIXTURE]` writes: the mixture's folder, or the published generation's manifest/."""
    return ws.mixture_card(mixture) if mixture else ws.published().card


def write_card(ws: Workspace, mixture: str | None = None) -> Path:
    """Writes the card (atomically) and returns its path."""
    text = card_markdown(ws, mixture)
    out = card_path(ws, mixture)
    write_text(text, out)
    return out


def card_markdown(ws: Workspace, mixture: str | None = None) -> str:
    """The card's text: of the mixture's current build when `mixture` is given, else of the curated data."""
    con, views = connect(ws.root)
    if "funnel" not in views:
        raise UserError(f"no curated data in {ws.root}; run `loom curate` first")
    gen = ws.published()
    info = load_json(gen.curation_info)
    if mixture is None:
        return curated_card(ws, con, views, info)
    folder = checked_mixture(ws, mixture)
    with reading(folder) as build:
        meta, plan = load_meta(build), read_plan(build.root)
        licenses = read_licenses(build.root)
    if meta.get("generation", "") != gen.id:
        raise UserError(f"mixture '{mixture}' was built on curated data the workspace has since replaced; run "
                        f"`loom mix build {mixture}` first")
    return mixture_card(ws, con, views, info, meta, plan, licenses, build.id)


def checked_mixture(ws: Workspace, name: str) -> Path:
    """The folder of compiled mixture `name`; an unknown name is one line with the closest compiled one."""
    check_name("mixture", name)
    known = compiled_mixtures(ws.mixtures)
    if name not in known:
        raise UserError(f"mixture '{name}'{did_you_mean(name, sorted(known))} is not compiled in {ws.root} "
                        f"(compiled: {', '.join(sorted(known)) or 'none'}); `loom mix build NAME` compiles one")
    return ws.mixture_dir(name)


def curated_card(ws: Workspace, con, views: list[str], info: dict) -> str:
    stats = source_stats(con)
    documents = sum(s.documents for s in stats.values())
    title = f"Loom curated data ({len(stats)} sources)"
    intro = (f"The curated data of generation `{ws.published().id or '(before generations)'}`: "
             f"{number(documents)} documents and {number(sum(s.tokens or 0 for s in stats.values()))} tokens "
             f"kept from {number(sum(s.raw for s in stats.values()))} records of {len(stats)} sources.\n")
    return assemble(ws, con, views, info, stats, title, intro, documents,
                    [], vocab_size(ws, info), curate_commands(ws, info))


def mixture_card(ws: Workspace, con, views: list[str], info: dict, meta: dict, plan: list[dict],
                 licenses: list[dict], build_id: str) -> str:
    name = meta["name"]
    sources = sorted({s for c in meta["components"] for s in c["sources"]})
    stats = source_stats(con, sources)
    documents = con.execute("SELECT count(*) FROM (SELECT DISTINCT shard, row FROM mixture_documents "
                            "WHERE mixture = ?)", [name]).fetchall()[0][0]
    intro = (f"Mixture `{name}` (build `{build_id or '(before builds)'}`): {number(meta['tokens'])} training "
             f"tokens in {number(meta['steps'])} steps of {meta['global_batch']} sequences of {meta['seq_len']} "
             f"tokens, from {number(documents)} documents of {len(sources)} sources; manifest fingerprint "
             f"`{meta['manifest_fingerprint']}`.\n")
    composition = cs.composition_sections(meta, plan, source_tokens(con, name, meta, plan), licenses,
                                          tokens_by(con, name, plan, "domain"), tokens_by(con, name, plan, "quality_bucket"))
    commands = curate_commands(ws, info) + [f"loom mix build {name}"] + train_commands(ws, name)
    return assemble(ws, con, views, info, stats, f"Loom mixture {name}", intro, documents, composition,
                    meta["vocab_size"], commands, meta["tokenizer_fingerprint"])


def assemble(ws: Workspace, con, views: list[str], info: dict, stats: dict, title: str, intro: str, documents: int,
             composition: list[str], vocabulary: int | None, commands: list[str], fingerprint: str | None = None) -> str:
    """The header and the sections every card has, with a mixture's composition after the introduction."""
    sources = list(stats)
    origins = cs.provenance(ws.published())
    spoken = cs.languages(con, sources, LANGUAGE_SHARE)
    fingerprint = fingerprint or info.get("tokenizer_fingerprint", "")
    body = [f"# {title}\n", intro, *composition, cs.sources_section(stats, origins, info),
            cs.licenses_section(stats, origins), cs.languages_section(spoken, LANGUAGE_SHARE),
            cs.funnel_section(stats), cs.dedup_section(con, views, sources),
            cs.decontamination_section(con, views, info.get("decontamination"), stats),
            cs.pii_section(con, views, sources),
            cs.tokenizer_section(tokenizer_shown(info.get("tokenizer", ""), fingerprint, ws, [workspace_root(ws.root)]),
                                 fingerprint, vocabulary),
            cs.rebuild_section(commands),
            f"*Written by `loom card` from the workspace's manifest{' and plan' if composition else ''}.*\n"]
    spdx = {origins.get(s, cs.Provenance()).license for s in sources}
    return header(title, spdx, [code for code, _ in spoken], size_category(documents)) + "\n".join(body)


def header(title: str, spdx: set[str], languages: list[str], size: str) -> str:
    """The YAML header; `license_name` (the Hub's field for a licence it does not list) where one such licence is."""
    from huggingface_hub import DatasetCardData

    others = sorted({i.lower() for expression in spdx for i in licence_ids(expression) if hf_license(i) == "other"})
    data = DatasetCardData(license=sorted({hub for e in spdx for hub in hf_licenses(e)}), language=languages or None,
                           size_categories=[size], task_categories=TASK_CATEGORIES, pretty_name=title, tags=["loom"],
                           **({"license_name": others[0]} if len(others) == 1 else {}))
    return f"---\n{data.to_yaml()}\n---\n\n"


def vocab_size(ws: Workspace, info: dict) -> int | None:
    """The vocabulary of the tokenizer the data was curated with, where the workspace still holds it."""
    from tokenizers import Tokenizer

    path = info.get("tokenizer") or ""
    shown = tokenizer_shown(path, info.get("tokenizer_fingerprint", ""), ws, [workspace_root(ws.root)])
    local = ws.root / shown if not shown.endswith(OUTSIDE_WORKSPACE) else Path(path)
    return Tokenizer.from_file(str(local)).get_vocab_size() if not ws.remote and local.is_file() else None


def curate_commands(ws: Workspace, info: dict) -> list[str]:
    """`loom curate` as this data was curated: with the tokenizer and quality model it recorded (inside the
    workspace: relative to it)."""
    root = str(workspace_root(ws.root)).rstrip("/") + "/"
    options = [f"{flag} {shlex.quote(info[key].removeprefix(root))}"
               for flag, key in (("--tokenizer", "tokenizer"), ("--quality-model", "quality_model")) if info.get(key)]
    return [" ".join(["loom curate --sources sources.toml", *options])]


def train_commands(ws: Workspace, mixture: str) -> list[str]:
    """`loom train` as each run of the workspace on `mixture` was started (its run.json's options)."""
    import json

    from trainer.options import config_from_options, config_to_args

    commands = []
    for run_file in sorted(ws.runs.glob(f"*/{RUN_FILE}")) if ws.runs.exists() else []:
        config = json.loads(run_file.read_text()).get("config") or {}
        if config.get("mixture") != mixture:
            continue
        options = {k: tuple(v) if isinstance(v, list) else v for k, v in config.items() if k != "workspace"}
        try:
            args = config_to_args(config_from_options(ws.root, options))[2:]  # without --workspace
        except (KeyError, TypeError):  # a run.json of an older Loom, without every option of today's
            args = ["--mixture", mixture, "--run-name", run_file.parent.name]
        commands.append(shlex.join(["loom", "train", *args]))
    return commands
