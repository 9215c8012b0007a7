"""The word tokenizer the heuristic filters share: datatrove's blank-English spaCy tokenizer, giving the
same tokens for less work when several filters judge the same documents."""

from contextlib import contextmanager

from datatrove.utils.word_tokenizers import SpaCyTokenizer, strip_strings


class SharedWordTokenizer(SpaCyTokenizer):
    """Three savings over datatrove's SpaCyTokenizer, none of which changes a token:
    - the words of a text are computed once for every filter that asks (Gopher repetition, Gopher quality
      and FineWeb each split the whole text);
    - words come from spaCy's tokenizer alone: the sentencizer datatrove also runs sets no tokens;
    - spaCy's memory zone spans a batch of documents (`with words.batch():`) instead of a single call, so
      its caches of affixes and lexemes serve the whole batch and are still freed after it.
    Outside a batch every call opens its own memory zone, as datatrove's does."""

    def __init__(self):
        super().__init__("en")
        self._words: dict[str, list[str]] = {}
        self._in_batch = False

    @contextmanager
    def batch(self):
        with self.tokenizer.memory_zone():
            self._in_batch = True
            try:
                yield self
            finally:
                self._in_batch = False
                self._words.clear()

    @contextmanager
    def _zone(self):
        if self._in_batch:
            yield
        else:
            with self.tokenizer.memory_zone():
                yield

    def word_tokenize(self, text: str) -> list[str]:
        words = self._words.get(text)
        if words is None:
            with self._zone():
                words = strip_strings([token.text for token in _spacy_call(self.tokenizer.tokenizer, text)])
            if self._in_batch:
                self._words[text] = words
        return words

    def _sentences(self, text: str):
        self.tokenizer.max_length = len(text) + 10
        return _spacy_call(self.tokenizer, text).sents

    def sent_tokenize(self, text: str) -> list[str]:
        with self._zone():
            return strip_strings([sentence.text for sentence in self._sentences(text)])

    def span_tokenize(self, text: str) -> list[tuple[int, int]]:
        with self._zone():
            return [(sentence.start_char, sentence.end_char) for sentence in self._sentences(text)]


def _spacy_call(tokenize, text: str):
    try:
        return tokenize(text)
    except Exception:
        if "IS_ALPHA" not in text:  # the one string that breaks spaCy's tokenizer; datatrove drops it too
            raise
        return tokenize(text.replace("IS_ALPHA", ""))
