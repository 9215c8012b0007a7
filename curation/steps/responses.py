from curation.readers.warc import set_aside


class SetAsideResponses:
    """Of a WARC source, the responses that are not text pages (an HTTP status outside 2xx, a content type that
    is not text): documents all the same, removed here so that the funnel says why (curation.readers.warc)."""

    name = "response"

    def run(self, docs, funnel):
        for doc in docs:
            if why := set_aside(doc.meta):
                reason, detail = why
                funnel.remove(doc, self.name, reason, detail=detail)
                continue
            yield doc
