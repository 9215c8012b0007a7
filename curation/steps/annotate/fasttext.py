"""The `fasttext` annotator kind: any fastText classifier file (DCLM's, a FineWeb-Edu-style one, the team's own);
the score of a text is the probability the model gives its `label`."""

from base.digests import file_digest
from base.inputs import local_file, open_input
from curation.fasttext_model import is_fasttext_header, load_fasttext
from curation.steps.annotate.kinds import AnnotatorKind

LABEL_PREFIX = "__label__"
MAX_CHARS = 20_000  # of each text, on one line, as the quality classifier scores


def model_label(config, labels: list[str]) -> str | None:
    """The model's own spelling of the table's `label` ("hi" or "__label__hi"), or None when it has no such label."""
    for candidate in (config.label, LABEL_PREFIX + config.label):
        if candidate in labels:
            return candidate
    return None


LABELS_SHOWN = 20  # lid.176 has 176: the line names the model's first ones (its most frequent, as fastText sorts them)


def check(config) -> str | None:
    try:
        with open_input(config.model) as fh:
            head = fh.read(8)
    except OSError as err:
        return f"`model` = {config.model!r} cannot be read ({err.strerror or err}); name a fastText model file"
    if not is_fasttext_header(head):
        return f"`model` = {config.model!r} is not a fastText model file; name a .bin or .ftz that fastText saved"
    labels = list(load_fasttext(str(local_file(config.model))).get_labels())
    if model_label(config, labels) is None:
        shown = ", ".join(label.removeprefix(LABEL_PREFIX) for label in labels[:LABELS_SHOWN])
        more = f" ... ({len(labels)} labels)" if len(labels) > LABELS_SHOWN else ""
        return f"`label` = {config.label!r} is not a label of the model; use one of {shown}{more}"
    return None


class FastTextScorer:
    def __init__(self, config):
        self.model = load_fasttext(str(local_file(config.model)))  # a model on a store: fetched once per process
        self.label = model_label(config, list(self.model.get_labels()))

    def scores(self, texts: list[str]) -> list[float]:
        lines = [" ".join(text[:MAX_CHARS].split()) for text in texts]
        labels, probabilities = self.model.predict(lines, k=-1)
        return [float(dict(zip(names, values)).get(self.label, 0.0)) for names, values in zip(labels, probabilities)]


FASTTEXT = AnnotatorKind(
    help="any fastText classifier file (`model`); the score is the probability of its `label`",
    keys=("model", "label", "batch_size"),
    required=("model", "label"),
    check=check,
    digest=lambda config: file_digest(config.model),
    load=FastTextScorer,
)
