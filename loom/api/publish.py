"""`Workspace.publish` and `Workspace.publish_watch`: the workspace as a static site in WORKSPACE/sites/NAME
(reports.site), once, or again whenever a run trains on or a page changes."""

from typing import Callable


def publish(ws, name: str):
    """`loom publish NAME` -> reports.site.Site (folder, files, bytes, skipped pages)."""
    from reports.site import publish_site

    return publish_site(ws.root, name, ws.note)


def publish_watch(ws, name: str, every: float, published: Callable) -> None:
    """`loom publish NAME --watch`: publish, then every `every` seconds again if an input changed, calling
    `published(site, changed_paths)` each time; returns only by an exception (Ctrl-C: KeyboardInterrupt)."""
    from reports.site import watch_site

    watch_site(ws.root, name, every, published, ws.note)
