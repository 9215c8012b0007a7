"""The stored form of a text, and the id that names it."""

import unicodedata

import xxhash


def normalize_text(text: str) -> str:
    """The form documents are stored, identified and exact-deduplicated in."""
    return unicodedata.normalize("NFC", text).replace("\r\n", "\n").replace("\r", "\n").strip()


def document_id(normalized_text: str) -> str:
    return xxhash.xxh3_128_hexdigest(normalized_text.encode("utf-8"))


class Normalize:
    name = "normalize"

    def run(self, docs, funnel):
        for doc in docs:
            doc.text = normalize_text(doc.text)
            if not doc.text:
                funnel.remove(doc, self.name, "empty_text")
                continue
            doc.id = document_id(doc.text)
            yield doc
