"""`kind = "transformers"`: a local Hugging Face sequence-classification model folder as an annotator (a
FineWeb-Edu-style scorer, a code-quality classifier). A text's score is the probability of the model's `label`
(softmax over its labels; sigmoid for a multi-label model), or, for a regression head (one output), its raw output.

Nothing is downloaded: `check` reads the folder's file names and config.json only (on the client, before any
compute), and the worker loads the tokenizer and model with local_files_only. On a worker the model runs on the
GPU when torch sees one, else on the CPU with one torch thread while it scores (Loom runs one single-threaded
worker process per core, so more threads would only contend)."""

import importlib.util
import json
import threading
from contextlib import contextmanager, nullcontext
from pathlib import Path

from base.errors import UserError
from curation import model_folders
from curation.steps.annotate.kinds import AnnotatorKind

INSTALL = "pip install 'loom[transformers]'"
MODEL_FILES = model_folders.REQUIRED_FILES["Transformer"]  # config.json, weights and tokenizer, each one of names
CLASSIFIER = "ForSequenceClassification"  # how the architecture named in config.json ends
REGRESSION, MULTI_LABEL = "regression", "multi_label_classification"  # config.json's problem_type values
UNBOUNDED = 10**6  # a tokenizer's model_max_length at least this says "no limit" (transformers stores 1e30)


def where(config) -> str:
    return f"annotator '{config.name}' (kind = \"transformers\")"


def check(config) -> str | None:
    """One line of what is wrong with the annotator's folder or settings and the fix, or None. Reads no weights."""
    problem = _problem(config)
    return f"{where(config)}: {problem}" if problem else None


def _problem(config) -> str | None:
    for package in ("torch", "transformers"):
        if importlib.util.find_spec(package) is None:
            return f"needs the {package} package: {INSTALL}"
    folder = Path(config.model or "")
    if not config.model or not folder.is_dir():
        return (f"model = {str(config.model or '')!r} is not a folder; give a local Hugging Face model folder (what "
                "save_pretrained writes: config.json, weights, tokenizer); nothing is downloaded")
    if lacking := model_folders.missing_file(folder, MODEL_FILES):
        what, names = lacking
        return (f"the folder {folder} lacks its {what} ({' or '.join(names)}), which would have to be downloaded; "
                "nothing is: give a folder that holds the whole model")
    try:
        settings = json.loads((folder / model_folders.CONFIG_FILE).read_text(encoding="utf-8"))
        architectures = [str(name) for name in settings.get("architectures") or ()]
        labels = labels_of(settings)
    except (ValueError, AttributeError, TypeError) as err:
        return (f"{folder / model_folders.CONFIG_FILE} is not a model's config ({err}); give the folder "
                "save_pretrained wrote")
    if not any(name.endswith(CLASSIFIER) for name in architectures):
        held = ", ".join(architectures) or "a model that names no architecture"
        return (f"{folder} holds {held}, not a sequence classifier; give the folder of a *{CLASSIFIER} model (a "
                "score per text)")
    return _label_problem(labels, config)


def _label_problem(labels: list[str], config) -> str | None:
    if not all(type(count) is int and count >= 1 for count in (config.max_length, config.batch_size)):
        return "max_length and batch_size are counts of tokens and texts: set them to whole numbers, 1 or more"
    listed = ", ".join(repr(label) for label in labels)
    if len(labels) == 1:
        return None if config.label is None else (
            f"the model has one output, a regression head whose raw output is the score, so it takes no label: "
            f"remove label = {config.label!r}")
    if config.label is None:
        return f"the model has {len(labels)} labels ({listed}): set label to the one whose probability is the score"
    if config.label not in labels:
        return f"label {config.label!r} is not one of the model's labels ({listed}); set label to one of them"
    return None


def labels_of(settings: dict) -> list[str]:
    """The model's labels in output order: config.json's id2label, or transformers' default names (LABEL_0, ...)
    for its num_labels (2 when it says neither, as transformers assumes)."""
    if id2label := settings.get("id2label"):
        return [str(label) for _, label in sorted(id2label.items(), key=lambda item: int(item[0]))]
    return [f"LABEL_{i}" for i in range(int(settings.get("num_labels") or 2))]


def digest(config) -> str:
    """The folder's files, by name and bytes: a changed weight or tokenizer redoes what the annotator scored."""
    return model_folders.digest(config.model)


class TransformersScorer:
    """The folder's tokenizer and model, loaded once per worker process; `scores(texts)` -> one float per text.
    `device` None: "cuda" when torch sees a GPU, else "cpu". One call at a time (a worker with several threads
    shares it): the tokenizer's padding and truncation settings are shared state."""

    def __init__(self, config, device: str | None = None):
        import torch
        import transformers

        transformers.utils.logging.disable_progress_bar()  # no "Loading weights" bars in the workers' output
        self.device = torch.device(device or ("cuda" if torch.cuda.is_available() else "cpu"))
        self.batch_size = config.batch_size
        self._lock = threading.Lock()
        self.tokenizer, model = _load(config)
        self.model = model.to(self.device).eval()
        self.max_length = _max_length(config.max_length, self.tokenizer, model.config)
        self.output = _output(model.config, config.label)
        if self.tokenizer.pad_token is None and self.tokenizer.eos_token is not None:  # GPT-style: pads with EOS
            self.tokenizer.pad_token = self.tokenizer.eos_token
        if model.config.pad_token_id is None:  # a batch of several texts needs it to find each text's last token
            model.config.pad_token_id = self.tokenizer.pad_token_id

    def scores(self, texts: list[str]) -> list[float]:
        """Scores in the texts' order. Texts are batched by length (less padding), batch_size at a time."""
        import torch

        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        scored = [0.0] * len(texts)
        with self._lock, self._one_thread_on_cpu(), torch.inference_mode():
            for start in range(0, len(order), self.batch_size):
                batch = order[start:start + self.batch_size]
                for i, score in zip(batch, self._batch_scores([texts[i] for i in batch])):
                    scored[i] = score
        return scored

    def _batch_scores(self, texts: list[str]) -> list[float]:
        encoded = self.tokenizer(texts, padding=True, truncation=True, max_length=self.max_length,
                                 return_tensors="pt")
        if encoded["input_ids"].shape[1] == 0:  # no text of the batch has a token (a decoder's tokenizer adds none)
            encoded = self._masked_padding(len(texts))
        return self.output(self.model(**encoded.to(self.device)).logits.float()).tolist()

    def _masked_padding(self, count: int):
        """One padding token per text, masked: an empty text as it is in a batch with longer texts."""
        import torch
        from transformers import BatchEncoding

        pad = self.tokenizer.pad_token_id or 0
        masked = torch.zeros(count, 1, dtype=torch.long)
        return BatchEncoding({"input_ids": torch.full((count, 1), pad), "attention_mask": masked})

    def _one_thread_on_cpu(self):
        return nullcontext() if self.device.type != "cpu" else _torch_threads(1)


def _load(config):
    """The tokenizer and model from the folder's own files; any failure is the folder's, said in one line."""
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    try:
        return (AutoTokenizer.from_pretrained(config.model, local_files_only=True),
                AutoModelForSequenceClassification.from_pretrained(config.model, local_files_only=True))
    except Exception as err:  # noqa: BLE001 - whatever the loader raises, the fix is the folder
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise UserError(f"{where(config)}: the model folder {config.model} cannot be loaded from its own files "
                        f"({first}); give a folder that holds the whole model") from None


def _max_length(wanted: int, tokenizer, model_config) -> int:
    """Tokens per text: `max_length`, or the model's own limit when lower (more positions than it has fail)."""
    limits = [wanted, getattr(model_config, "max_position_embeddings", None)]
    if (tokenizer.model_max_length or UNBOUNDED) < UNBOUNDED:
        limits.append(tokenizer.model_max_length)
    return min(limit for limit in limits if limit)


def _output(model_config, label: str | None):
    """logits (batch x labels) -> the scores: the regression head's output, or `label`'s probability."""
    import torch

    if model_config.num_labels == 1:
        return lambda logits: logits[:, 0]
    column = next(i for i, name in model_config.id2label.items() if name == label)
    if model_config.problem_type == REGRESSION:
        return lambda logits: logits[:, column]
    if model_config.problem_type == MULTI_LABEL:
        return lambda logits: torch.sigmoid(logits[:, column])
    return lambda logits: torch.softmax(logits, dim=-1)[:, column]


@contextmanager
def _torch_threads(count: int):
    """torch's intra-op threads at most `count` while the block runs (never raised), as they were after."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(min(count, before))
    try:
        yield
    finally:
        torch.set_num_threads(before)


TRANSFORMERS = AnnotatorKind(
    help="a local Hugging Face sequence-classification model folder: a label's probability, or a regression "
         "head's output (on a GPU when there is one)",
    keys=("model", "label", "batch_size", "max_length"),
    required=("model",),
    check=check,
    digest=digest,
    load=TransformersScorer,
)
