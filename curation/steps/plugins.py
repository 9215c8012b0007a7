"""A source's own steps: `steps = ["package.module:name", ...]` in its [[source]] table names the user's functions
(or classes) that filter or change its documents after the built-in heuristic filters, before quality scoring.
No fork of Loom is needed for a filter of one's own.

The contract a step keeps. It is a function, or a class made once per worker process with no arguments whose
instance is called. It is called once per document with a `PluginDocument`, a read-only view of it: `text` (as the
filters before it left it), `meta` (the record's other fields, read-only), `lang` (its language code) and `id`.
It returns:

- None or True: the document is kept as it is;
- a str: the document is kept with this text (normalized as every text is; one that normalizes to nothing is
  removed with reason `plugin:NAME/empty`);
- False: the document is removed, reason `plugin:NAME/rejected`;
- (False, "reason"): the document is removed, reason `plugin:NAME/reason`.

NAME is the step's own name, the last dotted part after the colon (`my_rules.web:drop_ads` -> `drop_ads`). Removed
documents are funnel rows of fate `filtered` at stage `plugin:NAME`. Anything else returned is the step's bug in
every document: the job stops with one line naming the step and what it may return. A step that raises on a
document sets that document aside as `malformed` (reason `plugin_error`, the error's line in the funnel's detail
and in quarantine/ beside the text) and the job goes on.

The package must import where Loom runs (checked before any compute) and on every Dask worker; the digest of each
step's module source is in its source's fingerprint (curation.run.input_fingerprint), so editing a step redoes that
source's prepare stage and what follows. A worker that imported the module before it was edited (a cluster that
outlives a job) refuses to run the old code."""

import types
from dataclasses import dataclass

from base.errors import UserError
from curation.document import Doc, Funnel
from curation.steps.normalize import document_id, normalize_text
from curation.user_code import error_line, instance, load_object, source_digest, split_reference

STAGE_PREFIX = "plugin:"
ERROR_REASON = "plugin_error"
RETURNS = ("a step returns None or True (keep), a str (the new text), False (remove) or (False, \"reason\") "
           "(remove with that reason)")


@dataclass(frozen=True, slots=True)
class PluginDocument:
    """What a step sees of a document."""

    text: str
    meta: types.MappingProxyType
    lang: str | None
    id: str | None


def step_name(reference: str) -> str:
    """The name a step's removals carry: the last dotted part after the colon."""
    return reference.rsplit(":", 1)[1].rsplit(".", 1)[-1]


def is_plugin_stage(stage) -> bool:
    """Whether a funnel row's stage is a plugin step's."""
    return isinstance(stage, str) and stage.startswith(STAGE_PREFIX)


def step_where(source_name: str, reference: str) -> str:
    """How an error names a step."""
    return f"source '{source_name}' step '{reference}'"


def check_references(references: tuple[str, ...], where: str) -> None:
    """A source's `steps` as sources.toml gives them (`where` names the source): each a `package.module:name`, no
    two with one name (it names their funnel stage). Nothing is imported here: plan_job builds the steps."""
    names: dict[str, str] = {}
    for reference in references:
        split_reference(reference, f"{where}: `steps`")
        name = step_name(reference)
        if name in names:
            raise UserError(f"{where}: `steps` '{names[name]}' and '{reference}' are both named '{name}' in the "
                            "funnel; rename one of them")
        names[name] = reference


def step_digests(source) -> list[str]:
    """Each step's reference and its module's source digest, for the source's fingerprint ([] without steps)."""
    return [f"{ref}={source_digest(ref, step_where(source.name, ref))}" for ref in source.steps]


_MADE: dict[object, object] = {}  # what each step calls in this process (a class's one instance), by its target
_LOADED: dict[str, str] = {}  # a step's module -> its source digest when this process first loaded it


class PluginStep:
    """One `package.module:name` of a source's `steps`, as a document step. The reference is imported when the
    step is built (on the client at plan time: an error there is one line before any compute); a class is made when
    a worker first runs the step."""

    def __init__(self, source_name: str, reference: str):
        self.where = step_where(source_name, reference)
        self.target = load_object(reference, self.where)
        if isinstance(self.target, type) and "__call__" not in dir(self.target):
            raise UserError(f"{self.where}: class {self.target.__name__} has no __call__(self, doc); give it one, or "
                            "name a function")
        self.name = STAGE_PREFIX + step_name(reference)
        self.reference, self.module = reference, split_reference(reference, self.where)[0]
        _LOADED.setdefault(self.module, source_digest(reference, self.where))

    def check_unchanged(self) -> None:
        """A worker of a cluster that outlives a job keeps the module it imported: after an edit the fingerprint is
        the new code's, so running the old one would mark stale output as done."""
        if source_digest(self.reference, self.where) != _LOADED[self.module]:
            raise UserError(f"{self.where}: module '{self.module}' changed since this Dask worker imported it; "
                            "restart the workers (each keeps the module it has imported) and curate again")

    def function(self):
        """The function, or the class's one instance in this process."""
        if self.target not in _MADE:
            try:
                _MADE[self.target] = instance(self.target)
            except Exception as err:  # noqa: BLE001 - the class cannot be made: the step's bug on every document
                raise UserError(f"{self.where}: {self.target.__name__}() failed ({error_line(err)}); a step's class is "
                                "made once per worker process, with no arguments") from None
        return _MADE[self.target]

    def run(self, docs, funnel: Funnel):
        self.check_unchanged()
        step = self.function()
        for doc in docs:
            try:
                verdict = step(PluginDocument(doc.text, types.MappingProxyType(doc.meta), doc.lang, doc.id))
            except Exception as err:  # noqa: BLE001 - the step's bug on this document: it alone is set aside
                funnel.remove(doc, self.name, ERROR_REASON, fate="malformed", detail=self.error_detail(err))
                continue
            if self.keeps(doc, verdict, funnel):
                yield doc

    def keeps(self, doc: Doc, verdict, funnel: Funnel) -> bool:
        """Applies what the step returned to the document: True when it is kept."""
        if verdict is None or verdict is True:
            return True
        if isinstance(verdict, str):
            text = normalize_text(verdict)
            if not text:
                funnel.remove(doc, self.name, f"{self.name}/empty")
                return False
            if text != doc.text:
                doc.text, doc.id = text, document_id(text)  # `id` stays the hash of the stored text
            return True
        if verdict is False:
            funnel.remove(doc, self.name, f"{self.name}/rejected")
            return False
        if isinstance(verdict, tuple) and len(verdict) == 2 and verdict[0] is False \
                and isinstance(verdict[1], str) and verdict[1]:
            funnel.remove(doc, self.name, f"{self.name}/{verdict[1]}")
            return False
        raise UserError(f"{self.where} returned {short_repr(verdict)} for document {doc.id}; {RETURNS}")

    def error_detail(self, err: Exception) -> str:
        return f"{self.name}: {error_line(err)}"


def short_repr(value, limit: int = 60) -> str:
    text = repr(value)
    return f"{text[:limit]}... ({type(value).__name__})" if len(text) > limit else f"{text} ({type(value).__name__})"


def plugin_steps(source) -> list[PluginStep]:
    """The source's `steps`, in their order."""
    return [PluginStep(source.name, reference) for reference in source.steps]
