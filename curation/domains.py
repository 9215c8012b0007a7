"""Topic domains: a small clustering model fitted on a sample of documents, then applied to every document.

The embedding is hashed TF-IDF (words and word bigrams of a text's first MAX_CHARS characters hashed into FEATURES
columns, so that no vocabulary is held), reduced by a truncated SVD to `dims` dimensions and normalized; the idf
and the SVD are fitted on at most BASIS_TEXTS of the sample, so that the sparse matrix held is bounded whatever
`sample` is. The domains are spherical k-means centres on every sampled text's unit vector (scikit-learn's KMeans
on unit vectors, its centres normalized again, documents assigned by cosine). A document's distance is 1 - its
cosine to its domain's centre.

The fitted state is plain arrays (idf, SVD components, centres) in one .npz and its settings and top terms in a
JSON file: no pickle. A hashed feature has no word, so the top terms are recorded while fitting: for each domain,
the sample's words (and bigrams) whose hashed columns have the highest mean TF-IDF over its members, less their
mean over the whole sample. Same texts, same settings and seed: same model, same digest."""

import hashlib
import json
from collections import Counter

import numpy as np

from base.atomic_files import atomic_path, write_text
from base.small_files import read_text
from base.store import as_path
from base.workspace import DOMAIN_SETTINGS_FILE, DOMAIN_STATE_FILE

FEATURES = 2 ** 15  # hashed columns; the SVD components (DIMS x FEATURES float32) are 8 MiB
DIMS = 64  # SVD dimensions
N_INIT = 4  # k-means restarts (the best inertia is kept)
TOKEN_PATTERN = r"(?u)\b[^\W\d_]{2,}\b"  # words of two or more letters
TOP_TERMS = 12  # recorded per domain
BASIS_TEXTS = 50_000  # of the sample: the TF-IDF matrix held while fitting (a few hundred MB at most)
NAMING_TEXTS = 10_000  # texts whose terms name the top columns (hashing's columns have no word)
MAX_CHARS = 4_000  # of a text, embedded: a topic shows in its first ~600 words, and a huge document costs no more
PREDICT_BATCH = 2048  # documents embedded at once: bounds predict's memory
ARRAYS = ("idf", "components", "centres")


class DomainModel:
    """`fit(texts)`, then `predict(texts)` -> (domain int32, distance float32); `save(folder)`/`load(folder)`."""

    def __init__(self, k: int, seed: int = 0, dims: int = DIMS, features: int = FEATURES):
        self.k, self.seed, self.dims, self.features = k, seed, dims, features
        self.idf = self.components = self.centres = None
        self.terms: list[list[str]] = []

    # ---- fitting ----

    def fit(self, texts: list[str]) -> "DomainModel":
        """The idf, the SVD and the top terms come from a seeded subset of at most BASIS_TEXTS texts (all of a
        smaller sample), whose TF-IDF matrix is the one large thing held; the centres from every text's vector,
        embedded in batches."""
        from sklearn.cluster import KMeans
        from sklearn.decomposition import TruncatedSVD

        if len(texts) < self.k:
            raise ValueError(f"{len(texts)} documents cannot make {self.k} domains")
        basis = [texts[i] for i in self._basis(len(texts))]
        counts = self._hashed(basis)
        df = np.bincount(counts.indices, minlength=self.features)
        self.idf = (np.log((1 + len(basis)) / (1 + df)) + 1).astype(np.float32)  # scikit-learn's smoothed idf
        weighted = self._tfidf(counts)
        del counts
        dims = max(1, min(self.dims, len(basis) - 1, self.features - 1))
        svd = TruncatedSVD(n_components=dims, algorithm="randomized", n_iter=5, random_state=self.seed)
        basis_vectors = _unit_rows(svd.fit_transform(weighted).astype(np.float32))
        self.components = svd.components_.astype(np.float32)
        vectors = basis_vectors if len(basis) == len(texts) else np.concatenate(
            [self.embed(texts[i:i + PREDICT_BATCH]) for i in range(0, len(texts), PREDICT_BATCH)])
        kmeans = KMeans(n_clusters=self.k, n_init=N_INIT, random_state=self.seed).fit(vectors)
        self.centres = _unit_rows(kmeans.cluster_centers_.astype(np.float32))
        labels, _ = self._assign(basis_vectors)
        self.terms = self._top_terms(basis, weighted, labels)
        return self

    def _basis(self, n: int) -> np.ndarray:
        """Which of n texts the idf, SVD and top terms are fitted on: all, or a seeded subset, in order."""
        if n <= BASIS_TEXTS:
            return np.arange(n)
        return np.sort(np.random.default_rng(self.seed).choice(n, BASIS_TEXTS, replace=False))

    def _top_terms(self, texts: list[str], weighted, labels: np.ndarray) -> list[list[str]]:
        """Per domain, the terms whose mean TF-IDF over its members most exceeds their mean over the sample (so
        that words common everywhere are not anyone's top terms). A column is named by the term hashed to it that
        is most frequent in up to NAMING_TEXTS of the sample (as many from each domain as there are), counted
        once per distinct term: a collision's rarer terms are left out."""
        from scipy import sparse

        members = sparse.csr_matrix((np.ones(len(labels), np.float32), (labels, np.arange(len(labels)))),
                                    shape=(self.k, len(labels)))
        sizes = np.maximum(np.bincount(labels, minlength=self.k), 1)[:, None]
        means = np.asarray((members @ weighted).todense()) / sizes
        means -= np.asarray(weighted.mean(axis=0))
        wanted = {d: np.argsort(-means[d], kind="stable")[:TOP_TERMS * 2] for d in range(self.k)}
        columns = {int(c) for top in wanted.values() for c in top}
        counts = Counter()
        analyze = self._vectorizer().build_analyzer()
        for i in naming_texts(labels, self.k):
            counts.update(analyze(texts[i][:MAX_CHARS]))
        named: dict[int, tuple[int, str]] = {}
        for term, n in counts.items():
            if (c := self.column(term)) in columns and (-n, term) < named.get(c, (0, "")):
                named[c] = (-n, term)
        return [[named[int(c)][1] for c in wanted[d] if int(c) in named and means[d, c] > 0][:TOP_TERMS]
                for d in range(self.k)]

    # ---- applying ----

    def predict(self, texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
        """Each text's domain (int32) and its cosine distance to the domain's centre (float32), in batches."""
        domains, distances = [np.empty(0, np.int32)], [np.empty(0, np.float32)]
        for start in range(0, len(texts), PREDICT_BATCH):
            d, dist = self._assign(self.embed(texts[start:start + PREDICT_BATCH]))
            domains.append(d)
            distances.append(dist)
        return np.concatenate(domains), np.concatenate(distances)

    def embed(self, texts: list[str]) -> np.ndarray:
        """Unit vectors of `dims` dimensions (zero for a text with no word)."""
        return _unit_rows(np.asarray(self._tfidf(self._hashed(texts)) @ self.components.T, dtype=np.float32))

    def _assign(self, vectors: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        similarity = vectors @ self.centres.T
        domains = np.argmax(similarity, axis=1).astype(np.int32)
        cosine = similarity[np.arange(len(domains)), domains]
        return domains, np.clip(1 - cosine, 0, 2).astype(np.float32)

    def top_terms(self, n: int = TOP_TERMS) -> list[list[str]]:
        """Each domain's top terms, best first."""
        return [terms[:n] for terms in self.terms]

    # ---- the embedding's parts ----

    def _vectorizer(self):
        from sklearn.feature_extraction.text import HashingVectorizer

        return HashingVectorizer(n_features=self.features, ngram_range=(1, 2), token_pattern=TOKEN_PATTERN,
                                 lowercase=True, alternate_sign=False, norm=None, dtype=np.float32)

    def column(self, term: str) -> int:
        """The hashed column of one term, as HashingVectorizer computes it (signed murmurhash3, absolute value)."""
        from sklearn.utils import murmurhash3_32

        return abs(murmurhash3_32(term, seed=0)) % self.features

    def _hashed(self, texts: list[str]):
        return self._vectorizer().transform([text[:MAX_CHARS] for text in texts]).tocsr()

    def _tfidf(self, counts):
        """Sublinear term frequency times idf, each row L2-normalized (in `counts`' own arrays)."""
        from sklearn.preprocessing import normalize

        counts.data = (np.log(counts.data) + 1) * self.idf[counts.indices]  # in place: counts is not kept
        return normalize(counts, copy=False)

    # ---- the saved state ----

    def settings(self) -> dict:
        return {"k": self.k, "seed": self.seed, "dims": self.dims, "features": self.features,
                "token_pattern": TOKEN_PATTERN, "ngram_range": [1, 2], "embedding": "tfidf", "terms": self.terms}

    @property
    def digest(self) -> str:
        """sha256 of the saved state: the settings' JSON and each array's type, shape and bytes."""
        sha = hashlib.sha256(json.dumps(self.settings(), sort_keys=True).encode())
        for name in ARRAYS:
            array = np.ascontiguousarray(getattr(self, name))
            sha.update(f"{name}:{array.dtype.str}:{array.shape}".encode())
            sha.update(array.tobytes())
        return sha.hexdigest()

    def save(self, folder) -> str:
        """Writes the state into `folder` (each file whole); returns the digest."""
        folder = as_path(folder)
        with atomic_path(folder / DOMAIN_STATE_FILE) as tmp:
            with open(tmp, "wb") as fh:
                np.savez(fh, **{name: getattr(self, name) for name in ARRAYS})
        write_text(json.dumps(self.settings(), sort_keys=True, indent=1), folder / DOMAIN_SETTINGS_FILE)
        return self.digest

    @classmethod
    def load(cls, folder) -> "DomainModel":
        folder = as_path(folder)
        settings = json.loads(read_text(folder / DOMAIN_SETTINGS_FILE))
        model = cls(settings["k"], settings["seed"], settings["dims"], settings["features"])
        model.terms = settings["terms"]
        with (folder / DOMAIN_STATE_FILE).open("rb") as fh, np.load(fh, allow_pickle=False) as arrays:
            for name in ARRAYS:
                setattr(model, name, arrays[name])
        return model


def naming_texts(labels: np.ndarray, k: int) -> np.ndarray:
    """Up to NAMING_TEXTS of the sample, the first of each domain's members in turn (a small domain gives all it
    has), in sample order."""
    per_domain = max(1, NAMING_TEXTS // k)
    picked = [np.flatnonzero(labels == d)[:per_domain] for d in range(k)]
    return np.sort(np.concatenate(picked))


def _unit_rows(matrix: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return matrix / np.where(norms > 0, norms, 1)
