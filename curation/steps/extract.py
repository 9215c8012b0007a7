"""The extract step: an HTML page's main text; a page with none is removed, saying why (`extract_too_deep` when
its tags nest deeper than the HTML parser goes, else `no_text_extracted`)."""

import lxml.etree

from curation.readers.warc import is_html


def is_page(doc) -> bool:
    """Whether a document is HTML: every one of an html-dir source; one that names its content type (a WARC
    record) only when that type is HTML, so a WARC's plain-text records (a WET file's) are not extracted."""
    content_type = doc.meta.get("content_type")
    return content_type is None or is_html(content_type)


class ExtractHtml:
    """Main text of an HTML page, with datatrove's Trafilatura extractor; other documents pass unchanged."""

    name = "extract"

    def __init__(self):
        from datatrove.pipeline.extractors import Trafilatura

        # trafilatura's own `deduplicate` keeps a process-wide cache of seen paragraphs, which makes a page's
        # text depend on which pages the same worker extracted before it; dedup is a later stage's job.
        self.extractor = Trafilatura(favour_precision=True, deduplicate=False)

    def run(self, docs, funnel):
        for doc in docs:
            if not is_page(doc):
                yield doc
                continue
            try:
                text = self.extractor.extract(doc.text)
            except Exception as err:  # trafilatura raises many kinds on broken markup
                funnel.remove(doc, self.name, "extraction_error", detail=str(err)[:200])
                continue
            if not text or not text.strip():
                if too_deep(doc.text):
                    funnel.remove(doc, self.name, "extract_too_deep", detail="its tags nest deeper than the HTML "
                                                                             f"parser goes ({PARSER_DEPTH} levels)")
                else:
                    funnel.remove(doc, self.name, "no_text_extracted")
                continue
            doc.text = text
            yield doc


PARSER_DEPTH = 256  # libxml2's, which trafilatura parses with: past it, it stops and the extractor finds nothing


def too_deep(html: str) -> bool:
    """Whether a page nests its tags deeper than the HTML parser goes (asked only of a page with no text)."""
    parser = lxml.etree.HTMLParser()
    try:
        lxml.etree.fromstring(html.encode("utf-8", "replace"), parser)
    except lxml.etree.LxmlError:
        pass
    return any("Excessive depth" in error.message for error in parser.error_log)
