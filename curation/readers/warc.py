"""WARC and WET files (`format = "warc"`), plain or gzip: one document per `response` record (an HTTP response's
body) and per `conversion` record (a WET file's text, already extracted from its page). Request, warcinfo,
metadata, revisit and resource records are not documents: they are skipped and not counted.

A document's meta holds its `url` (WARC-Target-URI), `date` (WARC-Date), `record_id`, `warc_type`,
`content_type` (the payload's media type, lowercased, without parameters) and, of a response, the HTTP
`status`. A response that is not a text page (a status outside 2xx, a content type that is not text) is still
a document: it comes out with no text, and the `response` step removes it with the reason `set_aside` gives,
so the funnel counts it. HTML documents go through the extract step; plain-text ones (WET) do not (`is_html`).
A damaged file gives malformed records (warc_framing.py) and reading goes on where it can."""

import codecs
import io
import re
from pathlib import Path
from typing import Iterator

from warcio.recordloader import ArcWarcRecord
from warcio.statusandheaders import StatusAndHeadersParser

from base.errors import UserError
from curation.document import Record
from curation.readers.fields import RAW_PREVIEW_CHARS, too_large, wrong_container
from curation.readers.streams import sniff
from curation.readers.warc_framing import Damaged, Frame, frames, head

DOCUMENT_TYPES = ("response", "conversion")
HTML_TYPES = ("text/html", "application/xhtml+xml")
HTTP_HEADER_BYTES = 1 << 16  # held on top of max_doc_bytes, so that a page of that size keeps its HTTP header
META_CHARSET = re.compile(rb"""<meta[^>]{0,200}?charset\s*=\s*["']?\s*([\w.:-]+)""", re.IGNORECASE)
HTTP = StatusAndHeadersParser(["HTTP/"], verify=False)


class WarcReader:
    shard_kind = "file"
    html = True  # a document whose content type is HTML is extracted (curation.steps.extract.is_page)
    http_responses = True  # responses that are not text pages are removed by curation.steps.responses

    def check(self, source, shard: Path) -> None:
        kind = sniff(shard)
        if kind == "parquet":
            raise wrong_container(source, shard, "is a Parquet file, not a WARC file", "parquet")
        if kind == "zstd":
            raise UserError(f"source '{source.name}': {shard} is zstd-compressed; format = \"warc\" reads plain and "
                            "gzip WARC files (.warc, .warc.gz): recompress it with gzip")
        start = head(shard, 5)
        if start.lstrip().startswith(b"{"):
            raise wrong_container(source, shard, "holds JSON lines, not WARC records", "jsonl")
        if start and not start.startswith(b"WARC/"):
            raise UserError(f"source '{source.name}': {shard} is not a WARC file (it starts {start!r}, not WARC/); "
                            "fix `paths` or `format` in sources.toml")

    def read(self, source, shard: Path) -> Iterator[Record]:
        def keep(headers: dict) -> int:
            return source.max_doc_bytes + HTTP_HEADER_BYTES if headers.get("warc-type") in DOCUMENT_TYPES else 0

        index = 0
        for item in frames(shard, keep):
            if isinstance(item, Damaged):
                yield Record(index=index, problem=item.problem, detail=item.detail)
            elif item.type in DOCUMENT_TYPES:
                yield document(source, item, index)
            else:
                continue
            index += 1


def document(source, frame: Frame, index: int) -> Record:
    headers = frame.headers
    meta = {"url": headers.get("warc-target-uri", ""), "date": headers.get("warc-date", ""),
            "record_id": headers.get("warc-record-id", ""), "warc_type": frame.type}
    where = f"{meta['url'] or 'record'} (byte {frame.offset}): "
    whole = frame.size == len(frame.block)
    content_type, payload = headers.get("content-type", ""), frame.block
    if frame.type == "response" and is_http(meta["url"]):
        try:
            content_type, payload = http_payload(frame, meta, source.max_doc_bytes + 1)
        except Exception as err:  # warcio's parsers and decoders raise many kinds on a broken response
            return Record(index=index, problem="malformed_http", detail=f"{where}{err}"[:500],
                          raw=frame.block[:RAW_PREVIEW_CHARS].decode("utf-8", "replace"))
    meta["content_type"] = media_type(content_type or ("text/plain" if frame.type == "conversion" else ""))
    if set_aside(meta):
        return Record(index=index, text="", meta=meta)  # the response step removes it, saying why
    if not whole or len(payload) > source.max_doc_bytes:
        size = frame.size if not whole else len(payload)
        return too_large(index, size, source.max_doc_bytes, payload, where)
    charset = text_charset(content_type, payload, meta["content_type"])
    try:
        text = payload.decode(charset)
    except UnicodeDecodeError as err:
        return Record(index=index, problem="invalid_encoding", detail=f"{where}not {charset}: {err}",
                      raw=payload[:RAW_PREVIEW_CHARS].decode("utf-8", "replace"))
    if not text.strip():
        return Record(index=index, problem="empty_text", detail=f"{where}the payload is empty")
    return Record(index=index, text=text, meta=meta)


def http_payload(frame: Frame, meta: dict, limit: int) -> tuple[str, bytes]:
    """An HTTP response's content type and body (chunked and content encodings undone), at most `limit` bytes
    of it; its status goes into `meta`. Of a response set aside or held only in part, only the status and
    headers are read (they come first, so a response too large to hold still says what it is)."""
    stream = io.BytesIO(frame.block)
    http = HTTP.parse(stream)
    if not http.protocol.startswith("HTTP/"):
        raise ValueError(f"its block starts {frame.block[:20]!r}, not an HTTP status line")
    meta["status"] = int(http.get_statuscode())
    content_type = http.get_header("content-type") or frame.headers.get("warc-identified-payload-type", "")
    if set_aside({**meta, "content_type": media_type(content_type)}) or frame.size > len(frame.block):
        return content_type, frame.block[stream.tell():]
    body = ArcWarcRecord("warc", "response", None, stream, http, None, frame.size).content_stream()
    return content_type, body.read(limit)


def set_aside(meta: dict) -> tuple[str, str] | None:
    """Why a WARC document is not a text page (the funnel's reason and detail), or None when it is one."""
    url = meta.get("url", "")
    if meta.get("warc_type") == "response" and not is_http(url):
        return "not_http", f"a {meta.get('content_type') or 'response'} record of {url}"  # e.g. a crawler's dns:
    status = meta.get("status")
    if status is not None and not 200 <= status < 300:
        return "http_status", f"HTTP status {status}: {url}"
    content_type = meta.get("content_type", "")
    if not is_text(content_type):
        return "not_text", f"content type {content_type or '(none)'}: {url}"
    return None


def is_http(url: str) -> bool:
    return url.lower().startswith(("http://", "https://"))


def media_type(content_type: str) -> str:
    """`text/html; charset=UTF-8` -> `text/html`."""
    return content_type.split(";")[0].strip().lower()


def is_html(media: str) -> bool:
    return media in HTML_TYPES


def is_text(media: str) -> bool:
    return media.startswith("text/") or is_html(media)


def text_charset(content_type: str, payload: bytes, media: str) -> str:
    """The payload's charset: the Content-Type's, else an HTML page's <meta charset>, else UTF-8. Python's name
    for it; one Python does not know is read as UTF-8 (a byte order mark dropped)."""
    named = re.search(r"charset\s*=\s*[\"']?([\w.:-]+)", content_type, re.IGNORECASE)
    if named is None and is_html(media):
        named = META_CHARSET.search(payload[:4096])
    name = named.group(1) if named else "utf-8"
    name = name.decode("ascii", "replace") if isinstance(name, bytes) else name
    try:
        charset = codecs.lookup(name).name
    except LookupError:
        charset = "utf-8"
    return "utf-8-sig" if charset == "utf-8" else charset
