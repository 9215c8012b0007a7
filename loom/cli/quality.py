"""`loom quality train`: the fastText classifier that scores documents, and its validation metrics."""

import time
from pathlib import Path

import click

from base.workspace import MODELS_DIR, QUALITY_MODEL_FILE, Workspace
from loom.cli.console import LoomGroup, console, counting_bars, writes_models
from loom.cli.options import force_option, named_output, sources_option


@click.group(cls=LoomGroup)
def quality():
    """Train the fastText quality classifier that scores documents."""


@quality.command("train")
@click.option("--positive", metavar="SRC[,SRC...]", help="High-quality sources or files [default: [quality] positive]")
@click.option("--negative", metavar="SRC[,SRC...]", help="Low-quality sources or files [default: [quality] negative]")
@click.option("--text-field", metavar="FIELD", default="text", show_default=True,
              help="The field that holds the text in files named by --positive/--negative (a source's is its "
                   "text_field)")
@sources_option
@click.option("--max-per-class", type=click.IntRange(min=20), default=5000, show_default=True)
@click.option("--valid-fraction", type=click.FloatRange(0.05, 0.5), default=0.2, show_default=True)
@click.option("--epoch", type=click.IntRange(min=1), default=10, show_default=True)
@click.option("--lr", type=click.FloatRange(min=0, min_open=True), default=0.3, show_default=True)
@click.option("--word-ngrams", type=click.IntRange(1, 5), default=2, show_default=True)
@click.option("--dim", type=click.IntRange(min=2), default=64, show_default=True)
@click.option("--min-count", type=click.IntRange(min=1), default=2, show_default=True)
@click.option("--bucket", type=click.IntRange(min=1000), default=2_000_000, show_default=True,
              help="Hashed word n-gram rows before quantization")
@click.option("--cutoff", type=click.IntRange(min=0), default=100_000, show_default=True,
              help="Quantize to the CUTOFF embedding rows of largest norm (~2.7 MB); 0 keeps the full model (~517 MB)")
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--output", metavar="FILE", help="Where to save it, and its card beside it [default: "
                                               f"WORKSPACE/{MODELS_DIR}/{QUALITY_MODEL_FILE}, replaced]")
@force_option
@click.pass_obj
def quality_train(ws: Workspace, positive, negative, text_field, sources, output, force, **hyperparameters):
    """Train on balanced positive and negative examples; print validation precision, recall, F1 and ROC AUC."""
    from curation.quality import TrainingConfig

    from loom.api.curate import workspace_sources

    output = named_output(output, force) if output else ws.quality_model
    with writes_models(ws, output):
        train_quality(workspace_sources(ws, sources), names(positive), names(negative), TrainingConfig(**hyperparameters),
                      output, text_field)


def quantized(config) -> str:
    return f", then quantized to {config.cutoff:,} rows" if config.cutoff else ""


def names(value: str | None) -> list[str] | None:
    return [name.strip() for name in value.split(",") if name.strip()] if value else None


def train_quality(sources_file: Path, positive, negative, config, output: Path, text_field: str = "text") -> None:
    from curation.config import load_config
    from curation.quality import train_quality_model
    from curation.samples import quality_examples

    started = time.monotonic()
    with counting_bars() as progress:
        texts, data = quality_examples(load_config(sources_file), positive, negative, config.max_per_class,
                                       text_field, progress)
    per_class = min(len(texts["positive"]), len(texts["negative"]), config.max_per_class)
    console.print(f"Read {len(texts['positive']):,} positive and {len(texts['negative']):,} negative documents in "
                  f"{time.monotonic() - started:.1f}s; training the fastText quality classifier on {per_class:,} "
                  f"of each ({config.epoch} epochs{quantized(config)})", soft_wrap=True)
    started = time.monotonic()
    card = train_quality_model(texts["positive"], texts["negative"], output, config, data)
    metrics = card["validation"]
    console.print(f"Quality model: {output}, {card['size_bytes'] / 1e6:.1f} MB (card {output.with_suffix('.json')}), "
                  f"trained in {time.monotonic() - started:.1f}s", soft_wrap=True)
    console.print(f"  trained on {card['sizes']['train']} documents, validated on {card['sizes']['valid']} "
                  f"(positive: {', '.join(data['positive'])}; negative: {', '.join(data['negative'])})")
    console.print(f"  validation: precision {metrics['precision']:.3f}  recall {metrics['recall']:.3f}  "
                  f"F1 {metrics['f1']:.3f}  ROC AUC {metrics['roc_auc']:.4f}")
