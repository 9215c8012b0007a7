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
                funnel.remove(doc, self.name, "no_text_extracted")
                continue
            doc.text = text
            yield doc
