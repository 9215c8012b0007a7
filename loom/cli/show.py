"""`loom show INPUT#RECORD` (or a doc id): one record's whole story (loom.api.show), as plain text in short
sections or, with --json, as one JSON object."""

import json

import click

from base.workspace import Workspace
from loom.cli.console import api_workspace

INDENT = "  "


@click.command()
@click.argument("record", metavar="INPUT#RECORD|DOC_ID")
@click.option("--json", "as_json", is_flag=True, help="Print the story as one JSON object")
@click.option("--chars", type=click.IntRange(min=0), default=2000, show_default=True,
              help="Characters of the extracted text shown")
@click.pass_obj
def show(ws: Workspace, record: str, as_json: bool, chars: int):
    """What became of one input record: its raw bytes' start, extracted text, language, quality, each stage's
    verdict, duplicates, domain and tokens. INPUT and RECORD as `loom sql "SELECT input, record FROM funnel"` shows
    them (INPUT may also be a path relative to this folder); or a doc id."""
    story = api_workspace(ws).show(record, chars)
    if as_json:
        click.echo(json.dumps(story.as_dict(), ensure_ascii=False, indent=2))
        return
    for heading, lines in sections(story):
        if lines:
            click.echo(f"{heading}\n" + "\n".join(f"{INDENT}{line}" for line in lines) + "\n")


def sections(story) -> list[tuple[str, list[str]]]:
    return [(f"Record {story.where}", record_lines(story)),
            ("Raw bytes (the start)", block(story.raw, story.raw_note)),
            (f"Extracted text{text_size(story)}", block(story.text, story.text_note)),
            ("Language and scores", score_lines(story)),
            ("Duplicates", duplicate_lines(story)),
            ("Domain", [f"{story.domain}{f' ({story.domain_name})' if story.domain_name else ''}"]
             if story.domain is not None else []),
            ("Tokens", token_lines(story))]


def record_lines(story) -> list[str]:
    return [f"source   {story.source}, shard {story.shard}", f"doc id   {story.doc_id or '(none: never read as text)'}",
            f"verdict  {story.verdict}",
            *([f"curated  {story.curated_part}, row {story.row}"] if story.curated_part else [])]


def text_size(story) -> str:
    if story.text is None:
        return ""
    shown = "" if len(story.text) == story.text_chars else f", the first {len(story.text):,}"
    return f" ({story.text_chars:,} characters{shown})"


def block(text: str | None, note: str | None) -> list[str]:
    from curation.readers.raw_record import escaped_bytes

    if text is None:
        return [note] if note else []
    return escaped_bytes(text.encode("utf-8")).splitlines() or [""]


def score_lines(story) -> list[str]:
    lines = []
    if story.lang:
        lines.append(f"language  {story.lang}" + (f" (score {story.lang_score:.3f})" if story.lang_score is not None
                                                  else ""))
    if story.quality is not None:
        lines.append(f"quality   {story.quality:.3f}, bucket {story.quality_bucket}")
    lines += [f"{name}  {value}" for name, value in story.annotators.items() if value is not None]
    return lines


def duplicate_lines(story) -> list[str]:
    lines = []
    if story.dup_cluster:
        lines.append(f"near-duplicate cluster {story.dup_cluster}")
    if story.dup_count and story.dup_count > 1:
        lines.append(f"{story.dup_count} documents had its text or a near copy of it (itself included)")
    if story.kept_copy:
        lines.append(f"kept copy: {story.kept_copy}")
    if story.same_doc_id:
        lines.append("records with the same doc id:")
        lines += [f"  {other}" for other in story.same_doc_id]
    return lines


def token_lines(story) -> list[str]:
    if story.n_tokens is None:
        return []
    lines = [f"{story.n_tokens:,} tokens (EOS included); the first {len(story.tokens or [])}: "
             + " ".join(map(str, story.tokens or []))]
    if story.decoded:
        lines.append("decoded: " + " ".join(json.dumps(piece, ensure_ascii=False) for piece in story.decoded))
    elif story.tokens_note:
        lines.append(story.tokens_note)
    return lines
