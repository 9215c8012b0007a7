"""`loom init`: a new workspace folder with a starter sources.toml (one example source) and its folders."""

import shutil

import click

from base.atomic_files import atomic_path, write_text
from base.errors import UserError
from base.workspace import MODELS_DIR, TOKENIZER_FILE, Workspace, examples_dir
from loom.cli.console import console

STARTER_SOURCES = """\
# The corpora `loom curate` reads: one [[source]] table per corpus. Every key and format is described in
# Loom's docs/curation.md, section "Sources: `sources.toml`". A relative path starts from this file's folder (or from
# `root = "/data/corpora"`, set at the top).

# An example to start from: the documentation pages bundled with Loom. Replace it with your own data.
[[source]]
name = "docs"                       # 1-64 of [a-z0-9_-]: the name mixtures, reports and `loom sql` use
format = "jsonl.gz"                 # any format `loom curate --help` lists
paths = ["{docs}/*.jsonl.gz"]
text_field = "text"                 # the field that holds each record's text
id_field = "id"                     # optional: the source's own id, kept in meta as source_id
tags = ["docs", "en"]               # groups of sources a mixture can weigh together
filters = ["gopher_repetition"]     # any of the filters `loom curate --help` lists; without this key a web
                                    # source (of a web format, or tagged "web") gets every web filter, and any
                                    # other none (reStructuredText fails all but gopher_repetition)

# Topic domains inside sources (docs/curation.md, "Topic domains"): uncomment to cluster the kept documents into
# k domains, which mixtures weigh as cells ("docs:domain=*" = 0.5).
# [domains]
# k = 24
"""


@click.command()
@click.option("--tokenizer", metavar="FILE", help=f"A {TOKENIZER_FILE} to curate with, copied to "
                                                  f"{MODELS_DIR}/{TOKENIZER_FILE} [default: train one with "
                                                  "`loom tokenizer train`]")
@click.pass_obj
def init(ws: Workspace, tokenizer):
    """Create a workspace: a starter sources.toml with one example source, models/ and mixtures/."""
    if ws.sources_file.exists():
        raise UserError(f"{ws.sources_file} exists: this workspace is set up already; edit it, or give another "
                        "folder with `loom init -w DIR`")
    if tokenizer:
        check_tokenizer(tokenizer, ws)
    for folder in (ws.root, ws.models, ws.mixtures):
        folder.mkdir(parents=True, exist_ok=True)
    write_text(STARTER_SOURCES.format(docs=examples_dir() / "corpora" / "docs"), ws.sources_file)
    console.print(f"Wrote {ws.sources_file}: one example source (the bundled docs); replace it with your corpora")
    if tokenizer:
        with atomic_path(ws.tokenizer) as tmp:
            shutil.copyfile(tokenizer, tmp)
        console.print(f"Copied {tokenizer} to {ws.tokenizer}")
    loom = ws.loom_command()
    train = "" if tokenizer else f"`{loom} tokenizer train`, then "
    console.print(f"Next: {train}`{loom} curate`; `{loom} status` says what the workspace holds", soft_wrap=True,
                  markup=False)


def check_tokenizer(path: str, ws: Workspace) -> None:
    """One line for a file curation could not tokenize with, or a tokenizer the workspace has already, before
    anything is written."""
    from curation.tokenizer import load_tokenizer

    if ws.tokenizer.exists():
        raise UserError(f"{ws.tokenizer} exists; remove it first to use {path} instead")
    load_tokenizer(path)
