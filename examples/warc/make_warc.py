"""Writes the sample WARC and WET files of this folder from the bundled Debian handbook pages
(examples/corpora/web), as a crawler would have saved them from https://debian-handbook.info:

    python examples/warc/make_warc.py        (needs warcio; the WET needs datatrove's Trafilatura)

- handbook.warc: a warcinfo record, then for each page a request and its response (HTTP/1.1 status line, Date,
  Server, Last-Modified, Content-Type with charset, Content-Length); one German page served as ISO-8859-1, one
  page served gzip-compressed (Content-Encoding), a metadata record, a revisit record (a page fetched again,
  unchanged), a 404 response and an image/png response. 10 response records.
- handbook.warc.gz: the same records, each in its own gzip member (as Common Crawl writes them).
- handbook.warc.wet.gz: a WET file of the text pages: a warcinfo record, then one `conversion` record per page
  holding the text that html-dir's extractor (Trafilatura) takes out of it.

Everything is deterministic (record ids are uuid5 of the record, dates fixed, gzip without a timestamp), so
rerunning the script rewrites the same bytes."""

import gzip
import io
import struct
import uuid
import zlib
from email.utils import format_datetime
from datetime import datetime, timezone
from pathlib import Path

from warcio.warcwriter import WARCWriter

HERE = Path(__file__).resolve().parent
WEB = HERE.parent / "corpora" / "web"
SITE = "https://debian-handbook.info/browse"
CRAWLED = datetime(2024, 5, 6, 7, 8, 0, tzinfo=timezone.utc)
MODIFIED = "Thu, 22 Sep 2022 10:00:00 GMT"  # the package's version date (11.20220922)
SERVER = "Apache/2.4.59 (Debian)"
USER_AGENT = "loom-example-crawler/1.0"
PAGES = [  # (language folder, bundled file, charset served, content encoding)
    ("en-US", "003-preface.html", "UTF-8", None),
    ("en-US", "009-sect.contributing.html", "UTF-8", None),
    ("en-US", "014-sect.future-of-this-book.html", "UTF-8", None),
    ("en-US", "018-sect.knoppix.html", "UTF-8", None),
    ("en-US", "027-sect.tails.html", "UTF-8", None),
    ("en-US", "029-sect.who-is-this-book-for.html", "UTF-8", None),
    ("en-US", "001-derivative-distributions.html", "UTF-8", "gzip"),
    ("de-DE", "003-preface.html", "ISO-8859-1", None),
]
NOT_FOUND = b"""<!DOCTYPE HTML PUBLIC "-//IETF//DTD HTML 2.0//EN">
<html><head>
<title>404 Not Found</title>
</head><body>
<h1>Not Found</h1>
<p>The requested URL was not found on this server.</p>
<hr>
<address>Apache/2.4.59 (Debian) Server at debian-handbook.info Port 443</address>
</body></html>
"""


def url_of(lang: str, name: str) -> str:
    return f"{SITE}/{lang}/stable/{name.split('-', 1)[1]}"


def page_bytes(lang: str, name: str, charset: str) -> bytes:
    html = (WEB / lang / name).read_text(encoding="utf-8")
    return html.encode(charset)  # raises if a page cannot be served in that charset: pick another page


def png_image() -> bytes:
    """A 16x16 grey PNG: an image response (the handbook's own images are not bundled)."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    pixels = b"".join(b"\x00" + b"\x80" * 16 for _ in range(16))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 16, 16, 8, 0, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(pixels, 9)) + chunk(b"IEND", b""))


class Crawl:
    """Records in the order a crawler writes them; `second` counts the crawl's clock."""

    def __init__(self):
        self.records: list[tuple[str, str, bytes, dict]] = []  # (url, type, block, extra WARC headers)
        self.second = 0

    def warc_date(self) -> str:
        return (CRAWLED.replace(second=self.second % 60, minute=8 + self.second // 60)).strftime("%Y-%m-%dT%H:%M:%SZ")

    def http_date(self) -> str:
        return format_datetime(CRAWLED.replace(second=self.second % 60, minute=8 + self.second // 60), usegmt=True)

    def fetch(self, url: str, status: str, body: bytes, headers: list[tuple[str, str]]) -> None:
        host, path = url.removeprefix("https://").split("/", 1)
        request = (f"GET /{path} HTTP/1.1\r\nHost: {host}\r\nUser-Agent: {USER_AGENT}\r\n"
                   "Accept: text/html,application/xhtml+xml,*/*;q=0.8\r\nAccept-Encoding: gzip\r\n\r\n").encode()
        when = {"WARC-Date": self.warc_date()}
        self.records.append((url, "request", request, when))
        head = [("Date", self.http_date()), ("Server", SERVER), *headers, ("Content-Length", str(len(body)))]
        response = (f"HTTP/1.1 {status}\r\n" + "".join(f"{k}: {v}\r\n" for k, v in head) + "\r\n").encode() + body
        self.records.append((url, "response", response, when))
        self.second += 1

    def page(self, lang: str, name: str, charset: str, encoding: str | None) -> None:
        body = page_bytes(lang, name, charset)
        headers = [("Last-Modified", MODIFIED), ("Vary", "Accept-Encoding")]
        if encoding == "gzip":
            body = gzip.compress(body, mtime=0)
            headers.append(("Content-Encoding", "gzip"))
        self.fetch(url_of(lang, name), "200 OK", body, [*headers, ("Content-Type", f"text/html; charset={charset}")])


def crawl() -> Crawl:
    c = Crawl()
    for lang, name, charset, encoding in PAGES:
        c.page(lang, name, charset, encoding)
        if name == "003-preface.html" and lang == "en-US":
            metadata = f"fetchTimeMs: 87\r\noutlinks: {SITE}/en-US/stable/sect.who-is-this-book-for.html\r\n"
            c.records.append((url_of(lang, name), "metadata", metadata.encode(),
                              {"Content-Type": "application/warc-fields", "WARC-Date": c.warc_date()}))
    c.fetch(f"{SITE}/en-US/stable/no-such-page.html", "404 Not Found", NOT_FOUND,
            [("Content-Type", "text/html; charset=iso-8859-1")])
    c.fetch(f"{SITE}/en-US/stable/Common_Content/images/image_right.png", "200 OK", png_image(),
            [("Last-Modified", MODIFIED), ("Content-Type", "image/png")])
    revisit = f"HTTP/1.1 200 OK\r\nDate: {c.http_date()}\r\nServer: {SERVER}\r\n\r\n".encode()
    c.records.append((url_of("en-US", "003-preface.html"), "revisit", revisit,
                      {"WARC-Profile": "http://netpreserve.org/warc/1.0/revisit/identical-payload-digest",
                       "WARC-Refers-To-Target-URI": url_of("en-US", "003-preface.html"), "WARC-Date": c.warc_date()}))
    return c


def write(path: Path, records: list[tuple[str, str, bytes, dict]], info: str, compress: bool, date: str) -> None:
    out = io.BytesIO()
    writer = WARCWriter(out, gzip=compress, warc_version="1.0")
    infoblock = (f"software: loom examples/warc/make_warc.py (warcio)\r\nformat: WARC File Format 1.0\r\n"
                 f"description: {info}\r\n").encode()
    every = [("", "warcinfo", infoblock, {"WARC-Filename": path.name, "Content-Type": "application/warc-fields"}),
             *records]
    for url, kind, block, extra in every:  # the same record has the same id in the plain and the gzip file
        key = path.name if kind == "warcinfo" else f"{kind} {url}"
        headers = {"WARC-Record-ID": f"<urn:uuid:{uuid.uuid5(uuid.NAMESPACE_URL, key)}>", "WARC-Date": date, **extra}
        record = writer.create_warc_record(url, kind, payload=io.BytesIO(block), length=len(block),
                                           warc_headers_dict=headers,
                                           warc_content_type=extra.get("Content-Type", ""))
        writer.write_record(record)
    path.write_bytes(out.getvalue())


def wet_records(c: Crawl) -> list[tuple[str, str, bytes, dict]]:
    from datatrove.pipeline.extractors import Trafilatura

    extractor = Trafilatura(favour_precision=True, deduplicate=False)  # as curation.steps.extract.ExtractHtml
    records, second = [], 0
    for lang, name, _, _ in PAGES:
        text = extractor.extract((WEB / lang / name).read_text(encoding="utf-8"))
        c.second = second
        records.append((url_of(lang, name), "conversion", text.encode("utf-8"),
                        {"WARC-Date": c.warc_date(), "Content-Type": "text/plain",
                         "WARC-Refers-To": f"<urn:uuid:{uuid.uuid5(uuid.NAMESPACE_URL, f'response {url_of(lang, name)}')}>"}))
        second += 1
    return records


def main() -> None:
    c = crawl()
    date = CRAWLED.strftime("%Y-%m-%dT%H:%M:%SZ")
    write(HERE / "handbook.warc", c.records, "Debian handbook pages, as served by debian-handbook.info", False, date)
    write(HERE / "handbook.warc.gz", c.records, "Debian handbook pages, as served by debian-handbook.info", True, date)
    write(HERE / "handbook.warc.wet.gz", wet_records(c), "text of the Debian handbook pages", True, date)
    for name in ("handbook.warc", "handbook.warc.gz", "handbook.warc.wet.gz"):
        print(f"{name}: {(HERE / name).stat().st_size} bytes")


if __name__ == "__main__":
    main()
