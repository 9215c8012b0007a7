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
  beat a real match it overlaps ("'s") and so change the chunk's tokens. Where a chunk's last token and the next
  one's first are neighbours in some special case (`_EdgePairs`, on the tokens before that matching) and one space
  parts them, spaCy tokenizes the run of such chunks as one.
A chunk's words are memoized per process (natural text is Zipfian: most chunks have been seen), and unseen chunks
are tokenized by one spaCy call per document, joined by newlines: a newline is a token no special case holds.
Checked token for token against datatrove's SpaCyTokenizer("en") on the bundled corpora, the Debian handbook in
its 26 languages and random strings of special cases (tests/curation/test_filters_fast.py)."""

import re
import sys
from contextlib import contextmanager
from itertools import chain, compress, count


@contextmanager
def _torch_unseen():
    """Imports under it find no torch. spaCy's thinc imports torch where it can: in every Dask worker of every
    curation that was ~1.5 s of CPU and ~177 MB of resident memory, for a tokenizer that needs none of it. A process
    that has torch already keeps it; one that imports torch later gets it."""
    if "torch" in sys.modules:
        yield
        return
    sys.modules["torch"] = None  # `import torch` raises ImportError, which thinc takes as no torch
    try:
        yield
    finally:
        if sys.modules.get("torch", "") is None:
            del sys.modules["torch"]


with _torch_unseen():
    from datatrove.utils.word_tokenizers import SpaCyTokenizer, strip_strings
    from spacy.attrs import IS_PUNCT
    from spacy.tokenizer import Tokenizer

_OTHER, _PUNCTUATION, _ENDS_SENTENCE = 0, 1, 2  # what spaCy's sentencizer tells of a token
_WHITESPACE = re.compile(r"\s+")  # \s is str.isspace, as str.split and spaCy's tokenizer cut
MEMO_CHUNKS = 200_000  # chunks remembered per process before the memo starts again: ~60 MB at most


class SharedWordTokenizer(SpaCyTokenizer):
    """datatrove's SpaCyTokenizer("en"), with the same words for far less work:
    - a text's words are put together from its chunks' memoized words (module docstring, ChunkWords);
    - the words of a text are computed once for every filter that asks, within a batch;
    - for sentences (C4's), spaCy's memory zone spans a batch of documents (`with words.batch():`) instead of a
      single call; outside a batch every such call opens its own memory zone, as datatrove's does."""

    def __init__(self):
        super().__init__("en")
        self._words: dict[str, list[str]] = {}
        self._in_batch = False
        self.chunks = ChunkWords()
        self._aside = None
        self._token_kinds: dict[str, int] = {}
        self._is_punct = self.tokenizer.vocab.lex_attr_getters[IS_PUNCT]

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
            words = self.chunks.words(text)
            if words is None:
                words = self._is_alpha_words(text)
            if self._in_batch:
                self._words[text] = words
        return words

    def _is_alpha_words(self, text: str) -> list[str]:
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

    def sentence_count(self, line: str) -> int:
        """How many sentences datatrove's split_into_sentences finds in a line (C4 counts them), as spaCy's
        sentencizer marks them on the line's tokens: one more each time a token that is neither punctuation nor
        a sentence-ending character follows such a character. A run of whitespace other than one space is a
        token of its own; where that is not enough to know the tokens, spaCy's pipeline counts."""
        chunks = line.split()
        if "IS_ALPHA" in line or not chunks or line != line.strip() or self.chunks.crossings_of(chunks):
            return len(self.span_tokenize(line)) or 1
        kinds = self._token_kinds
        separators = _WHITESPACE.findall(line)
        sentences, seen_end = 1, False
        for i, tokens in enumerate(self.chunks.parts_of(chunks)):
            if i and seen_end and separators[i - 1] != " ":  # a whitespace token
                sentences, seen_end = sentences + 1, False
            for token in tokens:
                kind = kinds.get(token)
                if kind is None:
                    kind = self._learn_kind(token)
                if kind == _ENDS_SENTENCE:
                    seen_end = True
                elif seen_end and kind == _OTHER:
                    sentences, seen_end = sentences + 1, False
        return sentences

    def _learn_kind(self, token: str) -> int:
        if len(self._token_kinds) > MEMO_CHUNKS:
            self._token_kinds.clear()
        sentencizer = self.tokenizer.get_pipe("sentencizer")
        kind = (_ENDS_SENTENCE if token in sentencizer.punct_chars
                else _PUNCTUATION if self._is_punct(token) else _OTHER)
        self._token_kinds[token] = kind
        return kind

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
    """A text's words from its chunks' memoized words; None where only spaCy over the whole text can say.

    It has a spaCy tokenizer of its own, whose vocabulary's memory zone lasts as long as the memo: the lexemes
    of the chunks' tokens are made once per memo, not once per batch, and freed with it."""

    def __init__(self, memo_chunks: int = MEMO_CHUNKS):
        import spacy

        self.tokenizer = spacy.blank("en").tokenizer
        self.edges = _EdgePairs(self.tokenizer)  # outside any zone: its special cases' lexemes outlive them all
        self.memo_chunks = memo_chunks
        self.memo: dict[str, tuple[str, ...]] = {}
        self.last_token: dict[str, str] = {}  # chunks whose last token can begin a cross-chunk match
        self.first_token: dict[str, str] = {}  # chunks whose first token can continue one
        self._zone = None
        self._start_memo()

    def _start_memo(self) -> None:
        self.memo.clear()
        self.last_token.clear()
        self.first_token.clear()
        if self._zone is not None:
            self._zone.__exit__(None, None, None)
        self._zone = self.tokenizer.vocab.memory_zone()
        self._zone.__enter__()

    def words(self, text: str) -> list[str] | None:
        if "IS_ALPHA" in text:  # the string that breaks spaCy (SharedWordTokenizer._is_alpha_words)
            return None
        chunks = text.split()
        parts = self.parts_of(chunks)
        crossings = self._crossings(chunks)
        if crossings:
            parts = self._with_runs(text, chunks, parts, crossings)
        return list(chain.from_iterable(parts))

    def parts_of(self, chunks: list[str]) -> list[tuple[str, ...]]:
        """The tokens of each chunk, as spaCy tokenizes it alone."""
        try:
            return list(map(self.memo.__getitem__, chunks))
        except KeyError:
            return list(map(self._learn(list(dict.fromkeys(chunks))).__getitem__, chunks))

    def crossings_of(self, chunks: list[str]) -> bool:
        """Whether a special case may match across two of the chunks, one space parting them."""
        self.parts_of(chunks)
        return bool(self._crossings(chunks))

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
            self._start_memo()
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
