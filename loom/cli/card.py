"""`loom card [MIXTURE]`: a data card in Hugging Face's dataset-card layout (loom.api.card)."""

import click

from base.workspace import Workspace
from loom.cli.console import api_workspace, console


@click.command()
@click.argument("mixture", required=False)
@click.pass_obj
def card(ws: Workspace, mixture: str | None):
    """Write a data card of MIXTURE, or of the curated data, in Hugging Face's dataset-card layout: a README.md
    whose YAML header gives licences, languages and size, then the sources with origin and licence, the funnel,
    dedup, decontamination, personal data, the mixture's composition, the tokenizer and how to rebuild it. Written
    to WORKSPACE/mixtures/MIXTURE/README.md, or without MIXTURE to the published generation's manifest/README.md."""
    path = api_workspace(ws).card(mixture)
    console.print(f"Card: {path}", soft_wrap=True, markup=False)
