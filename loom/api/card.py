"""`Workspace.card(mixture)`: `loom card [MIXTURE]`, the data card written (reports.card)."""

from pathlib import Path


def card(ws, mixture: str | None = None) -> Path:
    """Writes the data card of compiled mixture `mixture` (WORKSPACE/mixtures/NAME/README.md), or without one of the
    published curated data (its generation's manifest/README.md), and returns its path."""
    from reports.card import write_card

    return write_card(ws.files, mixture)
