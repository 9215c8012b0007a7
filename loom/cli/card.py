"""`loom card [MIXTURE]`: a data card in Hugging Face's dataset-card layout (loom.api.card)."""

import click

from base.workspace import Workspace
from loom.cli.console import api_workspace, console


@click.command()
@click.argument("mixture", required=False)
@click.pass_obj
def card(ws: Workspace, mixture: str | None):
    """Write a data card (a README.md in Hugging Face's dataset-card layout: licences, languages and size in its
    YAML header; sources with origin and licence, the funnel, dedup, decontamination, personal data, the tokenizer
    and how to rebuild it): of MIXTURE, with its composition, in WORKSPACE/mixtures/MIXTURE/README.md; without
    one, of the curated data, in its generation's manifest/README.md."""
    path = api_workspace(ws).card(mixture)
    console.print(f"Card: {path}", soft_wrap=True, markup=False)
