"""Loading a fastText model once per process (language ID and the quality classifier both use fastText)."""

import functools


@functools.cache
def load_fasttext(path: str):
    import fasttext

    fasttext.FastText.eprint = lambda *args, **kwargs: None  # silences a load-time warning per process
    return fasttext.load_model(path)
