"""C4's quality rules (datatrove's C4QualityFilter) with the sentences of each kept line counted from the words the
filters share (SharedWordTokenizer.sentence_count) instead of by spaCy's pipeline, line by line: the same verdict,
reason and kept lines as datatrove's for every text, and with a removal the detail of what it measured."""

from datatrove.pipeline.filters.c4_filters import CITATION_REGEX, ELLIPSIS, END_PUNCTUATION, POLICY_SUBSTRINGS

from curation.steps.measures import line_start, measured


class C4Quality:
    """datatrove's C4QualityFilter.filter(doc), its options read from a datatrove instance; it may change
    `doc.text` (the kept lines), as datatrove's does."""

    def __init__(self, reference, words):
        self.reference = reference
        self.words = words

    @staticmethod
    def covers(reference) -> bool:
        return reference.split_paragraph  # otherwise datatrove splits the text into sentences, not lines

    def filter(self, doc) -> bool | tuple[bool, str, str]:
        verdict = c4_lines(self.reference, doc.text.splitlines(), self.words.sentence_count)
        if isinstance(verdict, tuple):
            return verdict
        doc.text = "\n".join(verdict).strip()
        return True


def c4_lines(ref, lines: list[str], sentence_count) -> list[str] | tuple[bool, str, str]:
    """C4's walk over a text's lines (or sentences): the lines it keeps, or (False, reason, detail) where it
    removes the document. `sentence_count(line)`: how many sentences a kept line counts for."""
    num_sentences = 0
    kept_lines = []
    for line in lines:
        line = line.strip()
        words = line.split()
        if ref.max_word_length != -1 and any(len(word) > ref.max_word_length for word in words):
            continue
        if ref.remove_citations:
            line = CITATION_REGEX.sub("", line)
        if ref.filter_no_terminal_punct and (not line.endswith(END_PUNCTUATION) or line.endswith(ELLIPSIS)):
            continue
        if len(words) < ref.min_words_per_line:
            continue
        line_l = line.lower()
        if ref.filter_lorem_ipsum and "lorem ipsum" in line_l:
            return False, "lorem_ipsum", line_start(line)
        if ref.filter_javascript and "javascript" in line_l:
            continue
        if ref.filter_curly_bracket and "{" in line:
            return False, "curly_bracket", line_start(line)
        if ref.filter_policy and any(p in line_l for p in POLICY_SUBSTRINGS):
            continue
        if ref.min_num_sentences != -1:
            num_sentences += sentence_count(line)
        kept_lines.append(line)
    if num_sentences < ref.min_num_sentences:
        return False, "too_few_sentences", measured("sentences", num_sentences, "<", ref.min_num_sentences)
    return kept_lines
