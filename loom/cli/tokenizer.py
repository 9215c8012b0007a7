"""`loom tokenizer train`: the byte-level BPE that curation tokenizes with."""

import time
from pathlib import Path
from typing import Iterator

import click

from base.workspace import MODELS_DIR, SOURCES_FILE, TOKENIZER_FILE, Workspace
from loom.cli.console import LoomGroup, console, counting_bars, writes_models
from loom.cli.options import force_option, named_output, sources_option, tokenizer_path


@click.group(cls=LoomGroup)
def tokenizer():
    """Train the BPE tokenizer that curation uses."""


@tokenizer.command("train")
@sources_option
@click.option("--vocab-size", type=int, default=8192, show_default=True)
@click.option("--max-docs", type=click.IntRange(min=1), default=2000, show_default=True, help="Documents read per source")
@click.option("--output", metavar="FILE",
              help=f"Where to save it [default: {SOURCES_FILE}'s `tokenizer`, else "
                   f"WORKSPACE/{MODELS_DIR}/{TOKENIZER_FILE}, replaced]")
@force_option
@click.pass_obj
def tokenizer_train(ws: Workspace, sources, vocab_size, max_docs, output, force):
    """Train a byte-level BPE on the sources' text."""
    from curation.config import load_config
    from loom.api.curate import workspace_sources

    sources_file = workspace_sources(ws, sources)
    named = load_config(sources_file).tokenizer
    output = named_output(output, force) if output else tokenizer_path(ws, named)
    with writes_models(ws, output):
        train_tokenizer(sources_file, vocab_size, max_docs, output)


def train_tokenizer(sources_file: Path, vocab_size: int, max_docs: int, output: Path) -> None:
    """Trains and saves the BPE, saying what it does: a count of the texts read, then a line when the merges start
    and one with the time when it is saved."""
    from curation.config import load_sources
    from curation.tokenizer import train_tokenizer as train_bpe
    from curation.tokenizer import training_texts

    sources = load_sources(sources_file)
    started = time.monotonic()
    console.print(f"Training a {vocab_size}-token BPE on up to {max_docs:,} documents of each of {len(sources)} "
                  "source(s)", soft_wrap=True)

    def merging(read: int) -> None:
        console.print(f"Read {read:,} documents in {time.monotonic() - started:.1f}s; merging them into {vocab_size} "
                      "tokens", soft_wrap=True)

    with counting_bars() as progress:
        trained = train_bpe(counted(training_texts(sources, max_docs, progress), merging), output, vocab_size)
    console.print(f"Tokenizer: {output} ({trained.get_vocab_size()} tokens, {time.monotonic() - started:.1f}s)")


def counted(texts: Iterator[str], at_end) -> Iterator[str]:
    """`texts`, then `at_end(how many there were)`."""
    n = 0
    for n, text in enumerate(texts, 1):
        yield text
    at_end(n)
