"""A record from a row's fields: the text field taken out, the rest kept as the document's metadata (a NaN or
infinite number there stored as null: JSON has no such numbers, and meta is JSON); the records of what is not
one (a document over the size limit, which is filtered rather than malformed), the error for a file of the wrong kind, and a file's name as a record's
detail spells it."""

import math

from base.errors import UserError
from curation.document import Record

RAW_PREVIEW_CHARS = 2000  # of a malformed record, kept in quarantine (in bytes, for one too large to read)
TOO_LARGE = "too_large"  # a record over the source's max_doc_bytes: a limit, not broken input (fate `filtered`)
FIELDS_NAMED = 20  # of a record without the text field, the fields its detail names


def record_from_fields(source, obj: dict, index: int, raw: str = "") -> Record:
    if source.text_field not in obj:
        fields = list(obj)[:FIELDS_NAMED]  # in meta too, for a message that names them (curation.samples)
        return Record(index=index, problem="missing_text_field", meta={"fields": fields}, raw=raw,
                      detail=f"no field '{source.text_field}' (its fields: {', '.join(fields) or 'none'})")
    text = obj.pop(source.text_field)
    if not isinstance(text, str):
        return Record(index=index, problem="missing_text_field", detail=f"'{source.text_field}' is not a string", raw=raw)
    if not text.strip():
        return Record(index=index, problem="empty_text", detail="text is empty", raw=raw)
    if source.id_field and source.id_field in obj:
        obj["source_id"] = obj.pop(source.id_field)
    return Record(index=index, text=text, meta=null_non_finite(obj))


def null_non_finite(obj: dict) -> dict:
    """The fields with every NaN or infinite float in them, nested ones too, made None (in place)."""
    stack = [obj]
    while stack:
        container = stack.pop()
        for key, value in container.items() if isinstance(container, dict) else enumerate(container):
            if isinstance(value, float) and not math.isfinite(value):
                container[key] = None
            elif isinstance(value, (dict, list)):
                stack.append(value)
    return obj


def too_large(index: int, size: int, limit: int, start: bytes, where: str = "") -> Record:
    """A document over the source's `max_doc_bytes`: set aside with only its first bytes, never held whole."""
    return Record(index=index, problem=TOO_LARGE, detail=f"{where}{size} bytes, over max_doc_bytes = {limit}",
                  raw=start[:RAW_PREVIEW_CHARS].decode("utf-8", "replace"))


def filtered_when_read(problem: str) -> bool:
    """Whether a record its reader set aside was removed for a limit the source sets (`filtered` at stage `read`,
    not quarantined) rather than for being broken (`malformed`)."""
    return problem == TOO_LARGE


def name_of(path) -> str:
    """The file's name (the last part of a local path or a URL)."""
    return str(path).rstrip("/").rsplit("/", 1)[-1]


def wrong_container(source, shard, what: str, right_format: str) -> UserError:
    """The one line for an input whose first bytes say it is not what the source's `format` reads."""
    return UserError(f"source '{source.name}': {shard} {what}; set format = \"{right_format}\" for source "
                     f"'{source.name}' (or fix `paths` in sources.toml)")
