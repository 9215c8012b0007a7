"""A record from a row's fields: the text field taken out, the rest kept as the document's metadata."""

from curation.document import Record
from loom.errors import UserError
from loom.io import file_size, open_input

RAW_PREVIEW_CHARS = 2000  # of a malformed record, kept in quarantine


def record_from_fields(source, obj: dict, index: int, raw: str = "") -> Record:
    if source.text_field not in obj:
        return Record(index=index, problem="missing_text_field", detail=f"no field '{source.text_field}'", raw=raw)
    text = obj.pop(source.text_field)
    if not isinstance(text, str):
        return Record(index=index, problem="missing_text_field", detail=f"'{source.text_field}' is not a string", raw=raw)
    if not text.strip():
        return Record(index=index, problem="empty_text", detail="text is empty", raw=raw)
    if source.id_field and source.id_field in obj:
        obj["source_id"] = obj.pop(source.id_field)
    return Record(index=index, text=text, meta=obj)


def check_header(source, shard, magic: bytes) -> None:
    """A non-empty file must start with its format's magic bytes."""
    if file_size(shard) == 0:
        return
    with open_input(shard) as fh:
        head = fh.read(len(magic))
    if not head.startswith(magic):
        raise UserError(
            f"source '{source.name}': {shard} is not a readable {source.format} file (wrong header); "
            "re-create it or fix `format` in sources.toml"
        )
