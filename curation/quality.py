"""The quality classifier: a fastText model trained on positive and negative examples, the way DCLM did, that
gives each document `quality` = P(positive)."""

import json
import os
import random
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from base.atomic_files import atomic_path, write_text
from base.digests import file_digest
from base.errors import UserError
from base.inputs import file_size, local_file, open_input
from base.store import as_path
from curation.fasttext_model import is_fasttext_header, load_fasttext

POSITIVE, NEGATIVE = "__label__hq", "__label__lq"
MIN_CUTOFF = 256  # fastText's product quantizer needs as many rows as it has centroids


@dataclass(frozen=True)
class TrainingConfig:
    max_per_class: int = 5000
    valid_fraction: float = 0.2
    seed: int = 0
    epoch: int = 10
    lr: float = 0.3
    word_ngrams: int = 2
    dim: int = 64
    min_count: int = 2
    bucket: int = 2_000_000  # hashed word-bigram rows before quantization (fastText's default)
    # Quantized (product quantization, norms kept apart, retrained) to the `cutoff` embedding rows of largest
    # norm: ~2.7 MB instead of ~517 MB at the same AUC (bench/quality_model.py). 0 keeps the full float model.
    cutoff: int = 100_000
    # Dimensions per sub-vector: one k-means of 256 centroids per dim / dsub. fastText's default, 2, took 1.8x the
    # time (30.9 s against 17.1 s) for a 4.29 MB model instead of 2.69 at the same AUC (bench/quality_model.py).
    dsub: int = 4
    max_chars: int = 20_000  # of each document, for training and for scoring


def one_line(text: str, max_chars: int) -> str:
    return " ".join(text[:max_chars].split())


def check_quality_model(path: Path) -> None:
    """That `path` holds a fastText model, told by its first bytes: what the client checks, leaving the loading
    to the workers (once per process)."""
    try:
        with open_input(path) as fh:
            head = fh.read(8)
    except FileNotFoundError:
        raise UserError(f"no quality model at {path}; train one with `loom quality train` or pass --quality-model FILE") from None
    except OSError as err:
        raise UserError(f"cannot read the quality model {path} ({err.strerror}); pass a readable --quality-model FILE") from None
    if not is_fasttext_header(head):
        raise UserError(f"{path} is not a fastText model; train one with `loom quality train` or pass --quality-model FILE")


def card_max_chars(model: Path) -> int:
    """How much of each document the model was trained on (its card beside it), the default without a card."""
    try:
        with open_input(as_path(model).with_suffix(".json")) as fh:
            return json.load(fh)["hyperparameters"]["max_chars"]
    except FileNotFoundError:
        return TrainingConfig.max_chars


class QualityModel:
    def __init__(self, path: Path):
        path = as_path(path)
        check_quality_model(path)
        self.max_chars = card_max_chars(path)
        local = local_file(path)
        try:
            self.model = load_fasttext(str(local))
        except ValueError:
            raise UserError(f"{path} is not a fastText model; retrain it with `loom quality train`") from None
        labels = self.model.get_labels()
        if sorted(labels) != sorted([POSITIVE, NEGATIVE]):
            raise UserError(f"{path} does not have exactly the labels {POSITIVE} and {NEGATIVE}: it is not a Loom "
                            "quality model; retrain it with `loom quality train`")
        output = output_matrix(local, len(labels), self.model.get_dimension(), path)
        self.direction = output[labels.index(POSITIVE)] - output[labels.index(NEGATIVE)]

    def scores(self, texts: list[str]) -> np.ndarray:
        """P(positive) of each text: the two-label softmax, computed here from the sentence vector because
        fastText's predict adds 1e-5 to every probability, which ties every confident negative at 1e-5 (and a
        quantized model is confident about half the negatives of the bundled corpora)."""
        hidden = np.array([self.model.get_sentence_vector(one_line(t, self.max_chars)) for t in texts],
                          dtype=np.float64).reshape(len(texts), -1)
        with np.errstate(over="ignore"):
            return (1.0 / (1.0 + np.exp(-(hidden @ self.direction)))).astype(np.float32)


def output_matrix(local: Path, n_labels: int, dim: int, name) -> np.ndarray:
    """The label vectors, which fastText saves last in the file as int64 rows, int64 columns and float32 values
    (a model with an unquantized output layer, as `train_quality_model` saves; the Python API will not return
    them from a quantized model)."""
    size = 16 + n_labels * dim * 4
    with open_input(local) as fh:
        fh.seek(-size, 2)
        tail = fh.read(size)
    if len(tail) != size or tuple(np.frombuffer(tail[:16], "<i8")) != (n_labels, dim):
        raise UserError(f"{name} has a quantized output layer Loom cannot score with; retrain it with `loom quality train`")
    return np.frombuffer(tail[16:], "<f4").reshape(n_labels, dim).astype(np.float64)


def model_fingerprint(path: Path | None) -> str:
    return file_digest(path) if path else ""


def roc_auc(labels: np.ndarray, scores: np.ndarray) -> float:
    """Probability that a random positive outscores a random negative (ties count half)."""
    positives, negatives = scores[labels == 1], np.sort(scores[labels == 0])
    below = np.searchsorted(negatives, positives, side="left")
    tied = np.searchsorted(negatives, positives, side="right") - below
    return float((below + 0.5 * tied).sum() / (len(positives) * len(negatives)))


def classification_metrics(labels: np.ndarray, scores: np.ndarray, threshold: float = 0.5) -> dict:
    predicted = scores >= threshold
    tp = int(np.sum(predicted & (labels == 1)))
    fp = int(np.sum(predicted & (labels == 0)))
    fn = int(np.sum(~predicted & (labels == 1)))
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"precision": round(precision, 4), "recall": round(recall, 4), "f1": round(f1, 4),
            "roc_auc": round(roc_auc(labels, scores), 4), "threshold": threshold}


def balanced_split(positives: list[str], negatives: list[str], config: TrainingConfig):
    """The same number of each class (at most `max_per_class`), shuffled with the seed, then a validation split."""
    if not positives:
        raise UserError("the positive set is empty: name sources or files with documents in --positive")
    if not negatives:
        raise UserError("the negative set is empty: training needs both classes; name them in --negative")
    rng = random.Random(config.seed)
    n = min(len(positives), len(negatives), config.max_per_class)
    pos, neg = rng.sample(positives, n), rng.sample(negatives, n)
    n_valid = max(1, round(n * config.valid_fraction))
    if n - n_valid < 10:
        raise UserError(f"only {n} documents per class: fastText needs at least {n_valid + 10}; add examples")
    train = [(1, t) for t in pos[n_valid:]] + [(0, t) for t in neg[n_valid:]]
    valid = [(1, t) for t in pos[:n_valid]] + [(0, t) for t in neg[:n_valid]]
    rng.shuffle(train)
    return train, valid


def train_quality_model(positives: list[str], negatives: list[str], out: Path, config: TrainingConfig,
                        data: dict) -> dict:
    """Trains, evaluates on the held-out split, saves `out` and its JSON card beside it; returns the card."""
    import fasttext

    if 0 < config.cutoff < MIN_CUTOFF:
        raise UserError(f"--cutoff {config.cutoff} is too small: quantization needs at least {MIN_CUTOFF} rows (0: none)")
    train, valid = balanced_split(positives, negatives, config)
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False, encoding="utf-8") as fh:
        for label, text in train:
            fh.write(f"{POSITIVE if label else NEGATIVE} {one_line(text, config.max_chars)}\n")
    try:
        model = fasttext.train_supervised(
            input=fh.name, epoch=config.epoch, lr=config.lr, wordNgrams=config.word_ngrams, dim=config.dim,
            minCount=config.min_count, bucket=config.bucket, seed=config.seed, thread=1, verbose=0,
        )
        if config.cutoff:
            model.quantize(input=fh.name, qnorm=True, retrain=True, cutoff=config.cutoff, dsub=config.dsub, thread=1,
                           verbose=0)
    except RuntimeError as err:  # fastText's EncounteredNaNError: the training diverged
        if "NaN" not in str(err):
            raise
        raise UserError(f"the quality classifier diverged (fastText: {err}) on {len(train)} examples; lower --lr "
                        f"(now {config.lr}) or --dim (now {config.dim}), or give it more examples") from None
    finally:
        os.unlink(fh.name)
    with atomic_path(out) as tmp:
        model.save_model(str(tmp))
    card = {"model": out.name, "labels": {"positive": POSITIVE, "negative": NEGATIVE}, "data": data,
            "sizes": {"train": len(train), "valid": len(valid), "per_class": len(train) // 2 + len(valid) // 2},
            "size_bytes": file_size(out), "hyperparameters": asdict(config)}
    write_text(json.dumps(card, indent=2), out.with_suffix(".json"))
    load_fasttext.cache_clear()
    scorer = QualityModel(out)
    labels = np.array([label for label, _ in valid])
    card["validation"] = classification_metrics(labels, scorer.scores([text for _, text in valid]))
    write_text(json.dumps(card, indent=2), out.with_suffix(".json"))
    return card
