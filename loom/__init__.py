"""Loom: raw corpora to training mixtures, every step inspectable. From Python: `loom.open(workspace)` (loom.api),
imported when first called, so that `import loom` stays cheap."""

__version__ = "0.1.0"


def open(workspace=None, note=None):
    """The workspace at `workspace` as a loom.api.Workspace: curate, sql, mixtures.build/export, train, status."""
    from loom.api import open as open_workspace

    return open_workspace(workspace, note)
