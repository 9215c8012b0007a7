"""The word tokenizer the heuristic filters share: exactly the words datatrove's blank-English spaCy tokenizer
gives (spaCy's tokens, whitespace dropped), most of them without running spaCy.

Why the words of a text can be put together from the words of its chunks (its runs of non-whitespace, what
`str.split()` gives), as spaCy's tokenizer.pyx works:
- `_tokenize_affixes` cuts the text at every change between `str.isspace` and not, and tokenizes each run on its
  own (prefixes, suffixes, infixes, special cases, URL match; its cache is keyed by the run's text alone);
- a run of whitespace becomes whitespace tokens (a special case can only split a run, never add to it), which
  datatrove's `strip_strings` drops;
- then `_apply_special_cases` matches the multi-token special cases (":-)", "it's", "Dr." ...) over the token
  sequence. No special case of spaCy's English holds whitespace next to other characters, so no match can span a
  whitespace token; but a match can span two chunks that one space separates (the space is no token), e.g.
  "nothin 's" matches "nothin'" + "s": that match changes nothing itself (no rule has the space), yet it can
  beat a real match it overlaps ("'s") and so change the chunk's tokens. Such a document is told by its chunk
  edges (`_EdgePairs`) and tokenized by spaCy whole, as datatrove does.
A chunk's words are memoized per process (natural text is Zipfian: most chunks have been seen), and unseen chunks
are tokenized by one spaCy call per document, joined by newlines: a newline is a token no special case holds."""

import re
from contextlib import contextmanager
from itertools import chain, compress, count

from datatrove.utils.word_tokenizers import SpaCyTokenizer, strip_strings
from spacy.tokenizer import Tokenizer

_WHITESPACE = re.compile(r"\s+")  # \s is str.isspace, as str.split and spaCy's tokenizer cut
MEMO_CHUNKS = 200_000  # chunks remembered per process before the memo starts again: ~60 MB at most


class SharedWordTokenizer(SpaCyTokenizer):
    """datatrove's SpaCyTokenizer("en"), with the same words for far less work:
    - a text's words are put together from its chunks' memoized words (module docstring);
    - the words of a text are computed once for every filter that asks, within a batch;
    - spaCy's memory zone spans a batch of documents (`with words.batch():`) instead of a single call.
    Outside a batch every spaCy call opens its own memory zone, as datatrove's does."""

    def __init__(self):
        super().__init__("en")
        self._words: dict[str, list[str]] = {}
        self._in_batch = False
        # Built now, outside any memory zone: the lexemes of its special cases must outlive every zone.
        self.chunks = ChunkWords(self.tokenizer.tokenizer)
        self._aside = None

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
                words = self.chunks.words(text)
                if words is None:
                    words = self.spacy_words(text)
            if self._in_batch:
                self._words[text] = words
        return words

    def spacy_words(self, text: str) -> list[str]:
        """The words of a text that holds "IS_ALPHA", as datatrove's tokenizer gives them once it has met that
        token: spaCy's vocabulary keeps a stale lexeme for it after a memory zone, so from then on a text with
        that token raises, and datatrove tokenizes the text without the string (a process's first such text
        keeps it; this one tokenizer cannot tell which text was first). A tokenizer of its own, used outside
        memory zones, gives the tokens."""
        if self._aside is None:
            import spacy

            self._aside = spacy.blank("en").tokenizer
        tokens = [token.text for token in self._aside(text)]
        if "IS_ALPHA" in tokens:
            return self.word_tokenize(text.replace("IS_ALPHA", ""))
        return strip_strings(tokens)

    def _sentences(self, text: str):
        self.tokenizer.max_length = len(text) + 10
        return _spacy_call(self.tokenizer, text).sents

    def sent_tokenize(self, text: str) -> list[str]:
        with self._zone():
            return strip_strings([sentence.text for sentence in self._sentences(text)])

    def span_tokenize(self, text: str) -> list[tuple[int, int]]:
        with self._zone():
            return [(sentence.start_char, sentence.end_char) for sentence in self._sentences(text)]


class ChunkWords:
    """A text's words from its chunks' memoized words; None where only spaCy over the whole text can say."""

    def __init__(self, tokenizer, memo_chunks: int = MEMO_CHUNKS):
        self.tokenizer = tokenizer
        self.edges = _EdgePairs(tokenizer)
        self.memo_chunks = memo_chunks
        self.memo: dict[str, tuple[str, ...]] = {}
        self.last_token: dict[str, str] = {}  # chunks whose last token can begin a cross-chunk match
        self.first_token: dict[str, str] = {}  # chunks whose first token can continue one

    def words(self, text: str) -> list[str] | None:
        if "IS_ALPHA" in text:  # the string that breaks spaCy (SharedWordTokenizer.spacy_words)
            return None
        chunks = text.split()
        try:
            parts = list(map(self.memo.__getitem__, chunks))
        except KeyError:
            known = self._learn(list(dict.fromkeys(chunks)))
            parts = list(map(known.__getitem__, chunks))
        crossings = self._crossings(chunks)
        if crossings:
            parts = self._with_runs(text, chunks, parts, crossings)
        return list(chain.from_iterable(parts))

    def _crossings(self, chunks: list[str]) -> list[int]:
        """Each i where a special case may match across chunks[i] and chunks[i + 1], if one space parts them."""
        if self.first_token.keys().isdisjoint(chunks):
            return []
        edges = zip(map(self.last_token.get, chunks), map(self.first_token.get, chunks[1:]))
        return list(compress(count(), map(self.edges.pairs.__contains__, edges)))

    def _with_runs(self, text: str, chunks: list[str], parts: list, crossings: list[int]) -> list:
        """The parts, where chunks that one space joins may match across: each run of such chunks as spaCy
        tokenizes the run (no match crosses its ends)."""
        separators = _WHITESPACE.findall(text.strip())  # separators[i] parts chunks[i] and chunks[i + 1]
        runs: list[list[int]] = []  # the first and last chunk of each
        for i in crossings:
            if separators[i] != " ":
                continue
            if runs and runs[-1][1] == i:
                runs[-1][1] = i + 1
            else:
                runs.append([i, i + 1])
        run_texts = [" ".join(chunks[first:last + 1]) for first, last in runs]
        known = self._learn(run_texts)
        joined, done = [], 0
        for (first, last), run_text in zip(runs, run_texts):
            joined += parts[done:first]
            joined.append(known[run_text])
            done = last + 1
        return joined + parts[done:]

    def _learn(self, needed: list[str]) -> dict[str, tuple[str, ...]]:
        """The memo, holding the needed chunks (or runs of chunks): those not in it tokenized by spaCy."""
        unseen = [chunk for chunk in needed if chunk not in self.memo]
        if len(self.memo) + len(unseen) > self.memo_chunks:
            self.memo.clear()
            self.last_token.clear()
            self.first_token.clear()
            unseen = needed
        edges, matched = self.edges, []
        for chunk, tokens in zip(unseen, self._tokenize(unseen, edges.unmatched)):
            if tokens[-1] in edges.left:
                self.last_token[chunk] = tokens[-1]
            if tokens[0] in edges.right:
                self.first_token[chunk] = tokens[0]
            if len(tokens) > 1 and not edges.pairs.isdisjoint(zip(tokens, tokens[1:])):
                matched.append(chunk)  # a multi-token special case may match: spaCy's own tokens decide
            else:
                self.memo[chunk] = tokens
        self.memo.update(zip(matched, self._tokenize(matched, self.tokenizer)))
        return self.memo

    @staticmethod
    def _tokenize(chunks: list[str], tokenizer) -> list[tuple[str, ...]]:
        """Each chunk's tokens, from one call on the chunks joined by newlines (each newline is one token)."""
        if not chunks:
            return []
        per_chunk, current = [], []
        for token in tokenizer("\n".join(chunks)):
            text = token.text
            if text == "\n":
                per_chunk.append(tuple(current))
                current = []
            else:
                current.append(text)
        per_chunk.append(tuple(current))
        if len(per_chunk) != len(chunks) or not all(per_chunk):
            raise AssertionError("spaCy split newline-joined chunks unexpectedly")
        return per_chunk


class _EdgePairs:
    """The adjacent token pairs of spaCy's multi-token special-case patterns (the patterns `_apply_special_cases`
    matches: each special case that a prefix, suffix or infix rule would split, as the rules alone split it),
    and a copy of the tokenizer without that matching, whose tokens are the ones matched against."""

    def __init__(self, tokenizer):
        settings = dict(prefix_search=tokenizer.prefix_search, suffix_search=tokenizer.suffix_search,
                        infix_finditer=tokenizer.infix_finditer, token_match=tokenizer.token_match,
                        url_match=tokenizer.url_match)
        rules_alone = Tokenizer(tokenizer.vocab, rules={}, **settings)
        self.pairs: set[tuple[str, str]] = set()
        for key in tokenizer.rules:
            if any(c.isspace() for c in key) and not key.isspace():
                raise AssertionError(f"spaCy special case {key!r} mixes whitespace and text")
            if _in_special_matcher(tokenizer, key):
                pattern = [token.text for token in rules_alone(key)]
                self.pairs.update(zip(pattern, pattern[1:]))
        self.left = {a for a, _ in self.pairs}
        self.right = {b for _, b in self.pairs}
        self.unmatched = _TokenizerWithoutSpecialMatcher(tokenizer.vocab, rules=tokenizer.rules, **settings)


def _in_special_matcher(tokenizer, key: str) -> bool:
    """The condition of spaCy's Tokenizer.add_special_case for adding a special case to its matcher."""
    return (not tokenizer.faster_heuristics or bool(tokenizer.find_prefix(key)) or bool(tokenizer.find_infix(key))
            or bool(tokenizer.find_suffix(key)) or " " in key)


class _TokenizerWithoutSpecialMatcher(Tokenizer):
    """spaCy's tokenizer up to `_apply_special_cases`: while its special cases load it finds no affix, so
    add_special_case leaves its matcher empty; afterwards it splits as spaCy's does."""

    def __init__(self, *args, **kwargs):
        self._loading = True
        super().__init__(*args, **kwargs)
        self._loading = False

    def find_prefix(self, string):
        return 0 if self._loading else super().find_prefix(string)

    def find_suffix(self, string):
        return 0 if self._loading else super().find_suffix(string)

    def find_infix(self, string):
        return [] if self._loading else super().find_infix(string)


def _spacy_call(tokenize, text: str):
    try:
        return tokenize(text)
    except Exception:
        if "IS_ALPHA" not in text:  # the one string that breaks spaCy's tokenizer; datatrove drops it too
            raise
        return tokenize(text.replace("IS_ALPHA", ""))
