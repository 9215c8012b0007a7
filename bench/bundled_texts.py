"""The bundled corpora's texts, as curation reads them, optionally replicated: shared by the benchmarks that
time one stage in one process (tokenization.py, minhash.py)."""

import random
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def base_texts() -> list[str]:
    from curation.config import load_sources
    from curation.samples import source_texts

    sources = load_sources(REPO / "examples" / "sources.toml")
    return [t for source in sources for t in source_texts(source)]


def vary(text: str, k: int) -> str:
    """The text from its (5k)th word on, or the whole text if it is shorter."""
    if k == 0:
        return text
    parts = text.split(" ", 5 * k)
    return parts[-1] if len(parts) > 5 * k and parts[-1] else text


def corpus(texts: list[str], copies: int) -> list[str]:
    """`copies` copies of the texts; copy k > 0 starts each text 5k words later and is shuffled with seed k."""
    out = list(texts)
    for k in range(1, copies):
        copy = [vary(t, k) for t in texts]
        random.Random(k).shuffle(copy)
        out.extend(copy)
    return out
