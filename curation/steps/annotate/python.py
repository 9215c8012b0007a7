"""The `python` annotator kind: the user's own scorer, `function = "package.module:name"`: a function of a list of
texts returning one float per text, or a class (made once per worker process, with no arguments) whose instance
is called with the list. Loaded through curation.user_code, fingerprinted by its module's source."""

from base.errors import UserError
from curation import user_code
from curation.steps.annotate.kinds import AnnotatorKind


def where(config) -> str:
    return f"annotator '{config.name}' `function`"


def check(config) -> str | None:
    """The problem loading `function` (user_code's line, without the annotator's name: the config adds it)."""
    try:
        user_code.load_object(config.function, "`function`")
    except UserError as err:
        return str(err)
    return None


class PythonScorer:
    def __init__(self, config):
        self.call = user_code.instance(user_code.load_object(config.function, where(config)))

    def scores(self, texts: list[str]):
        return self.call(texts)


PYTHON = AnnotatorKind(
    help="your own Python scorer, `function` = \"package.module:name\": called with a list of texts, returns a "
         "float per text",
    keys=("function", "batch_size"),
    required=("function",),
    check=check,
    digest=lambda config: user_code.source_digest(config.function, where(config)),
    load=PythonScorer,
)
