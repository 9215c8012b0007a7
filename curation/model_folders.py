"""A local model folder named as `[domains] embedding`: which kind it is (model2vec or sentence-transformers),
whether it can be loaded as it is, its digest, and its encoder (texts -> vectors).

Nothing is downloaded. model2vec reads a folder that exists without asking the hub, and sentence-transformers is
loaded with local_files_only, so a folder that lacks a file fails to load rather than fetching it; `problem` finds
the usual gaps (no weights, no tokenizer, a module's folder missing, the package not installed) at config load,
before the cluster starts. model2vec's static embeddings are numpy on the CPU; a sentence-transformers model runs
on the GPU when torch sees one."""

import hashlib
import importlib.util
import json
import threading
from functools import lru_cache
from pathlib import Path

import numpy as np

from base.errors import UserError

TFIDF = "tfidf"  # the default embedding, no folder; any other `embedding` is a model folder's path
MODEL2VEC, SENTENCE_TRANSFORMERS = "model2vec", "sentence-transformers"
MODULES_FILE = "modules.json"  # a sentence-transformers folder's list of modules (model2vec writes one too)
STATIC_MODULES = {"StaticEmbedding", "Normalize"}  # a sentence-transformers layout that model2vec reads itself
CONFIG_FILE = "config.json"  # a Hugging Face model folder's settings
MODEL2VEC_FILES = (CONFIG_FILE, "model.safetensors", "tokenizer.json")
WEIGHT_FILES = ("model.safetensors", "model.safetensors.index.json", "pytorch_model.bin",
                "pytorch_model.bin.index.json")
TOKENIZER_FILES = ("tokenizer.json", "vocab.txt", "vocab.json", "spiece.model", "sentencepiece.bpe.model",
                   "tokenizer.model")
REQUIRED_FILES = {  # a module kind -> what its folder must hold, each one of some names
    "Transformer": (("config", (CONFIG_FILE,)), ("weights", WEIGHT_FILES), ("tokenizer", TOKENIZER_FILES)),
    "StaticEmbedding": (("weights", ("model.safetensors",)), ("tokenizer", ("tokenizer.json",))),
}
PACKAGES = {MODEL2VEC: ("model2vec", "pip install 'model2vec>=0.10'"),
            SENTENCE_TRANSFORMERS: ("sentence_transformers", "pip install 'loom[embeddings]'")}
ENCODE_BATCH = 64  # texts per forward pass of a sentence-transformers model
HASH_CHUNK = 1 << 20


def kind(folder: Path) -> str | None:
    """MODEL2VEC, SENTENCE_TRANSFORMERS, or None for a folder that is neither. A modules.json of static
    embeddings only is read by model2vec (it saves one itself); any other modules.json is sentence-transformers'.
    Without one, model2vec's own three files."""
    folder = Path(folder)
    if (folder / MODULES_FILE).is_file():
        return MODEL2VEC if set(_module_types(folder)) <= STATIC_MODULES else SENTENCE_TRANSFORMERS
    return MODEL2VEC if all((folder / name).is_file() for name in MODEL2VEC_FILES) else None


def problem(folder: Path) -> str | None:
    """Why the folder cannot be used as it is (a clause naming the fix), or None."""
    folder = Path(folder)
    try:
        found = kind(folder) if folder.is_dir() else None
    except ValueError as err:
        return f"has a {MODULES_FILE} that is not a list of sentence-transformers modules ({err})"
    if found is None:
        return (f"is not a model folder (no {MODULES_FILE}, nor model2vec's {', '.join(MODEL2VEC_FILES)} in "
                f"{folder}); use \"tfidf\" or a sentence-transformers or model2vec folder")
    module, install = PACKAGES[found]
    if importlib.util.find_spec(module) is None:
        return f"is a {found} folder, which needs the {found} package: {install}"
    if missing := _missing_files(folder):
        return f"lacks {missing}, which would have to be downloaded; nothing is: give a folder that holds the model"
    return None


def _modules(folder: Path) -> list[dict]:
    """modules.json's entries (a model2vec folder without one: its static embedding at the top)."""
    if not (folder / MODULES_FILE).is_file():
        return [{"path": ".", "type": "StaticEmbedding"}]
    modules = json.loads((folder / MODULES_FILE).read_text())
    if not isinstance(modules, list) or not all(isinstance(m, dict) and "type" in m for m in modules):
        raise ValueError("each entry needs a `type`")
    return modules


def _module_types(folder: Path) -> list[str]:
    """The last part of each module's type ("Transformer", "Pooling", "StaticEmbedding", ...)."""
    return [str(m["type"]).rsplit(".", 1)[-1] for m in _modules(folder)]


def _missing_files(folder: Path) -> str | None:
    """The first thing the folder's modules lack: a module's folder, or the files of a module that holds a model
    (REQUIRED_FILES)."""
    modules = _modules(folder)
    paths = [folder / str(module.get("path", "")) for module in modules]
    if missing := [path for path in paths if not path.is_dir()]:
        return f"the folder {missing[0]} of one of its modules"
    for kind_of_module, path in zip(_module_types(folder), paths):
        if lacking := missing_file(path, REQUIRED_FILES.get(kind_of_module, ())):
            what, names = lacking
            return f"its {kind_of_module} module's {what} ({' or '.join(names)} in {path})"
    return None


def missing_file(folder: Path, required) -> tuple[str, tuple[str, ...]] | None:
    """The first (what, names) of `required` (REQUIRED_FILES' pairs) of which the folder holds none of the names."""
    return next(((what, names) for what, names in required
                 if not any((Path(folder) / name).is_file() for name in names)), None)


# ---- the digest ----

def digest(folder) -> str:
    """sha256 over the folder's files, by relative name and bytes, in name order; hidden files and folders
    (a download tool's .cache/) are left out. Read again only when a file's size or time changed."""
    folder = Path(folder)
    files = sorted(p for p in folder.rglob("*") if p.is_file() and not any(
        part.startswith(".") for part in p.relative_to(folder).parts))
    signature = tuple((p.relative_to(folder).as_posix(), p.stat().st_size, p.stat().st_mtime_ns) for p in files)
    return _digest(str(folder), signature)


@lru_cache(maxsize=8)
def _digest(folder: str, signature: tuple) -> str:
    sha = hashlib.sha256()
    for name, size, _ in signature:
        sha.update(f"{name}\0{size}\0".encode())
        with open(Path(folder) / name, "rb") as fh:
            while chunk := fh.read(HASH_CHUNK):
                sha.update(chunk)
    return sha.hexdigest()


# ---- the encoder ----

class Encoder:
    """A loaded model folder: `encode(texts)` -> float32 vectors, one row per text (not normalized). One call at
    a time: a tokenizer's truncation setting is shared state."""

    def __init__(self, folder):
        self.folder = Path(folder)
        self.kind = kind(self.folder)
        self._lock = threading.Lock()
        self._encode = _load(self.folder, self.kind)

    def encode(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.empty((0, 0), np.float32)
        with self._lock:
            return np.asarray(self._encode(texts), dtype=np.float32)


def _load(folder: Path, found: str | None):
    """The folder's encode function. Any failure to load is the folder's: one line with the loader's first."""
    if found is None or (why := problem(folder)) is not None:
        raise UserError(f"[domains]: the embedding folder {folder} {why or 'is not a model folder'}")
    try:
        return _model2vec(folder) if found == MODEL2VEC else _sentence_transformer(folder)
    except Exception as err:  # noqa: BLE001 - whatever the loader raises, the fix is the folder
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise UserError(f"[domains]: the {found} folder {folder} cannot be loaded from its own files ({first}); "
                        "give a folder that holds the whole model") from None


def _model2vec(folder: Path):
    from model2vec import StaticModel

    model = StaticModel.from_pretrained(folder, force_download=False)  # an existing folder is read as it is
    return lambda texts: model.encode(texts, use_multiprocessing=False, show_progress_bar=False)


def _sentence_transformer(folder: Path):
    import torch
    import transformers
    from sentence_transformers import SentenceTransformer

    transformers.utils.logging.disable_progress_bar()  # no "Loading weights" bars in the workers' output
    device = "cuda" if torch.cuda.is_available() else "cpu"
    model = SentenceTransformer(str(folder), device=device, local_files_only=True)  # never the hub
    return lambda texts: model.encode(texts, batch_size=ENCODE_BATCH, convert_to_numpy=True,
                                      show_progress_bar=False)
