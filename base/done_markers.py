"""A done-marker holding a fingerprint, written last, says a piece of work is finished: it is the commit, and readers
trust only marked outputs."""

import json
import time

from base.atomic_files import write_text
from base.store import as_path


def mark_done(marker, fingerprint: str, stats: dict) -> None:
    write_text(json.dumps({"fingerprint": fingerprint, "finished": time.time(), **stats}), marker)


def done_stats(marker, fingerprint: str) -> dict | None:
    """The stats a finished run recorded, or None when the marker is missing or for other inputs."""
    try:
        recorded = json.loads(as_path(marker).read_text(encoding="utf-8"))
    except (FileNotFoundError, json.JSONDecodeError):
        return None
    return recorded if recorded.get("fingerprint") == fingerprint else None
