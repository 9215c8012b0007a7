"""Sources config (`sources.toml`): what raw corpora exist and how to curate each."""

from dataclasses import dataclass, field, fields
from pathlib import Path

from base.errors import UserError, did_you_mean, is_whole_number, reject_unknown_keys, string_list
from base.names import NAME, NAME_RULE, is_name
from base.small_files import read_text, read_toml
from base.store import is_url
from curation import model_folders
from curation.decontamination_config import DecontaminationConfig, parse_decontaminate
from curation.languages import is_language, unknown_language
from curation.licenses import UNKNOWN, spdx_license
from curation.model_folders import TFIDF
from curation.pii_config import check_pii_runs, parse_pii
from curation.readers import READERS
from curation.steps.annotate.config import AnnotatorConfig, parse_annotators
from curation.steps.filters import FILTERS, web_filters
from curation.steps.pii_patterns import KINDS as PII_KINDS
from curation.steps.plugins import check_references

# A source that does not set `filters` gets the web filters only if it is web text: they are tuned on web
# pages and remove most of other kinds (documentation, code, glossaries, man pages are short or full of markup).
WEB_TAG = "web"
SOURCE_NAME = NAME  # a source's name, also the first part of a mixture's slice key
DEFAULT_MAX_DOC_BYTES = 8 * 1024 * 1024
DEFAULT_SHARD_BYTES = 128 * 1024 * 1024  # a minute or two of one worker's time; a 40 GB file is ~320 shards
MIN_SHARD_BYTES = 1024


@dataclass(frozen=True)
class SourceConfig:
    """One raw corpus. Paths are globs; each matching file (or folder or glob of files, for *-dir formats) is cut
    into shards of about `shard_bytes` (curation.readers.spans); what they match is curation.readers.inputs'. A
    source that does not set `filters` gets the web filters (curation.steps.filters) when it is web text (a format
    READERS marks as web, html-dir or warc, or tagged "web") and none otherwise."""

    name: str
    format: str
    paths: tuple[str, ...]
    text_field: str = "text"
    id_field: str | None = None
    tags: tuple[str, ...] = ()
    languages: tuple[str, ...] = ()  # allowed languages (lid.176 codes); empty allows all
    min_lang_score: float = 0.0
    filters: tuple[str, ...] | None = None  # None (not set): the web filters for a web source, none for others
    filter_languages: tuple[str, ...] = ("en",)  # the heuristic filters are tuned for these; "*" is all
    filter_options: dict = field(default_factory=dict)  # filter name -> datatrove constructor arguments
    steps: tuple[str, ...] = ()  # the user's own steps, "package.module:name", after the filters (steps/plugins.py)
    quality_threshold: float | None = None  # remove documents whose quality score is lower
    keep_fraction: float | None = None  # or keep only this top fraction of the source by quality
    max_doc_bytes: int = DEFAULT_MAX_DOC_BYTES  # a larger record (line, text, file) is set aside as too_large
    shard_bytes: int = DEFAULT_SHARD_BYTES  # the stored bytes one shard reads, about
    base_dir: str = "."  # folder relative paths are resolved against: the file's top-level `root`, or its folder
    # fsspec options for URL paths (key, secret, endpoint_url, ...); never printed, fingerprinted or written out
    storage_options: dict = field(default_factory=dict, repr=False)
    pii: str | None = None  # "redact", "count" or "off" (curation.steps.pii); None (not set): "redact" for web text
    pii_kinds: tuple[str, ...] = PII_KINDS  # what the pii step looks for (curation.steps.pii_patterns)
    max_pii: dict = field(default_factory=dict)  # kind or "total" -> the most spans a kept document may hold
    # provenance (curation.licenses): an SPDX licence id or expression as SPDX spells it, or "unknown"; where the
    # data came from (a URL, "debian:PACKAGE=VERSION", a crawl id); how to cite it. Carried by each curated row
    # (license, origin) and manifest/provenance.parquet, not by the stages before tokenize
    license: str = UNKNOWN
    origin: str = ""
    citation: str = ""

    def __post_init__(self):
        if self.filters is None:  # not set: every heuristic filter for web text, none for any other
            object.__setattr__(self, "filters", web_filters() if self.is_web else ())
        if self.pii is None:  # not set: personal data redacted in web text, left alone in any other
            object.__setattr__(self, "pii", "redact" if self.is_web else "off")

    @property
    def is_web(self) -> bool:
        """Web text: a crawl (`warc`), saved pages (`html-dir`) or a source tagged "web"."""
        return (self.format in READERS and READERS[self.format].web) or WEB_TAG in self.tags

    def filters_apply_to(self, lang: str) -> bool:
        return "*" in self.filter_languages or lang in self.filter_languages


SOURCE_KEYS = {f.name for f in fields(SourceConfig)} - {"base_dir"}
# What only the curated rows' own columns (and the manifest) say of a source, not what any stage does with its
# documents: in the tokenize stage's fingerprint alone (citation in none: the generation's id holds it)
PROVENANCE_KEYS = ("license", "origin", "citation")


@dataclass(frozen=True)
class QualityConfig:
    """The `[quality]` table: which sources train the classifier, and how scores become buckets."""

    positive: tuple[str, ...] = ()
    negative: tuple[str, ...] = ()
    buckets: int = 5  # buckets at the quantiles of the whole corpus's scores: 0 (lowest) .. buckets-1
    cut_points: tuple[float, ...] = ()  # fixed, ascending cut points instead of quantiles


QUALITY_KEYS = {f.name for f in fields(QualityConfig)}


@dataclass(frozen=True)
class DedupConfig:
    """The `[dedup]` table of sources.toml."""

    enabled: bool = True
    scope: str = "global"  # or "per-source": documents only meet documents of their own source
    ngram: int = 5
    bands: int = 20  # 20 x 5: a pair at Jaccard 0.8 is a candidate with p 0.9996; verification drops the rest
    rows: int = 5
    seed: int = 1
    threshold: float = 0.8  # true shingle Jaccard a candidate pair needs to count
    max_cluster_size: int = 1000  # larger clusters are flagged and only members close to the survivor removed

    @property
    def num_perm(self) -> int:
        return self.bands * self.rows


@dataclass(frozen=True)
class DomainsConfig:
    """The `[domains]` table: topic domains fitted on a sample of the chosen sources (curation.stages.domains)."""

    k: int
    sources: tuple[str, ...] = ()  # the sources clustered; empty: all
    # documents the model is fitted on, at most: the fit is one task, so this bounds its time (20,000: 14 s on a
    # core, 500 per domain at k = 40) and memory; the assignment of every document runs on all the workers
    sample: int = 20_000
    embedding: str = "tfidf"  # or a local model folder's resolved path
    seed: int = 0
    names: dict = field(default_factory=dict)  # domain number as a string -> a name a mixture key may use

    def clustered(self, sources: list[SourceConfig]) -> list[str]:
        """The names of the sources whose documents get a domain."""
        return [s.name for s in sources if not self.sources or s.name in self.sources]


@dataclass(frozen=True)
class InspectConfig:
    """[inspect]: what a generation keeps for reading what was removed. `removed_sample`: how many removed documents'
    text to keep per source and reason (None: every one)."""

    removed_sample: int | None = 50


@dataclass(frozen=True)
class CurationConfig:
    sources: list[SourceConfig]
    quality: QualityConfig = QualityConfig()
    dedup: DedupConfig = DedupConfig()
    decontaminate: DecontaminationConfig | None = None  # no [decontaminate] table: nothing is checked
    domains: DomainsConfig | None = None  # no [domains] table: no document gets a domain
    # the top-level `tokenizer` (relative paths resolved against the file's folder, as `root` is); None: not set
    tokenizer: str | None = None
    annotators: tuple[AnnotatorConfig, ...] = ()  # the [[annotate]] tables: a numeric column each
    inspect: InspectConfig = InspectConfig()
    # the sources.toml it was read from (resolved) and its text, which a run records (curation.inputs_record); never
    # shown, as it may hold a source's storage_options
    file: str = ""
    text: str = field(default="", repr=False)


def load_sources(path: Path) -> list[SourceConfig]:
    return load_config(path).sources


def load_config(path: Path) -> CurationConfig:
    """Read and validate a sources.toml. Every problem is a UserError naming the key and the fix."""
    path = Path(path)
    if not path.is_file():
        raise UserError(f"no sources file at {path}; create one (see examples/sources.toml) or pass --sources")
    raw = read_toml(path)
    entries = raw.get("source")
    if not isinstance(entries, list) or not entries:
        raise UserError(f"{path}: no [[source]] entries; declare at least one source")
    top_keys = ("source", "root", "tokenizer", "quality", "dedup", "decontaminate", "domains", "annotate", "inspect")
    if unknown_top := sorted(set(raw) - set(top_keys)):
        raise UserError(f"{path}: unknown top-level key '{unknown_top[0]}'{did_you_mean(unknown_top[0], top_keys)}; "
                        "use `root`, `tokenizer`, [quality], [dedup], [decontaminate], [domains], [inspect], "
                        "[[annotate]] and [[source]]")
    root = raw.get("root", ".")
    if not isinstance(root, str):
        raise UserError(f"{path}: `root` must be a folder path (relative paths are resolved against it)")
    base_dir = (path.parent / root).resolve()
    sources = [_parse_source(entry, i, path, base_dir) for i, entry in enumerate(entries)]
    names = [s.name for s in sources]
    for name in names:
        if names.count(name) > 1:
            raise UserError(f"{path}: source name '{name}' is declared twice; names must be unique")
    decontaminate = parse_decontaminate(raw["decontaminate"], path, base_dir) if "decontaminate" in raw else None
    domains = _parse_domains(raw["domains"], path, names, base_dir) if "domains" in raw else None
    return CurationConfig(sources=sources, quality=_parse_quality(raw.get("quality", {}), path),
                          dedup=_parse_dedup(raw.get("dedup", {}), path), decontaminate=decontaminate,
                          domains=domains, tokenizer=_tokenizer(raw, path),
                          annotators=parse_annotators(raw.get("annotate", []), path, names, base_dir),
                          inspect=_parse_inspect(raw.get("inspect", {}), path),
                          file=str(path.resolve()), text=read_text(path))


def _tokenizer(raw: dict, path: Path) -> str | None:
    """The top-level `tokenizer`, relative to the file's folder (as `root` is: the workspace's own sources.toml
    then names WORKSPACE/models/... as models/...). Whether the file exists is checked where it is used (`loom
    curate`): `loom tokenizer train` reads this file before the tokenizer exists."""
    if "tokenizer" not in raw:
        return None
    value = raw["tokenizer"]
    if not isinstance(value, str) or not value:
        raise UserError(f"{path}: `tokenizer` must be the path of a tokenizer.json (relative to {path.parent})")
    return value if is_url(value) or Path(value).is_absolute() else str(path.parent.resolve() / value)


def _parse_domains(table, path: Path, source_names: list[str], base_dir: Path) -> DomainsConfig:
    where = f"{path}: [domains]"
    if not isinstance(table, dict):
        raise UserError(f"{where} must be a table")
    reject_unknown_keys(table, {f.name for f in fields(DomainsConfig)}, where)
    k = table.get("k")
    if not is_whole_number(k) or k < 2:
        raise UserError(f"{where}: `k` must be a whole number of domains, at least 2 (got {k!r}); e.g. k = 24")
    sample = table.get("sample", DomainsConfig.sample)
    if not is_whole_number(sample) or sample < k:
        raise UserError(f"{where}: `sample` ({sample!r}) must be a whole number of documents, at least `k` ({k}); "
                        "raise it or lower k")
    if not is_whole_number(seed := table.get("seed", 0)):
        raise UserError(f"{where}: `seed` must be a whole number")
    sources = string_list(table.get("sources", []), f"{where} `sources`")
    if unknown := [name for name in sources if name not in source_names]:
        raise UserError(f"{where}: `sources` names '{unknown[0]}'{did_you_mean(unknown[0], source_names)}, which is "
                        f"no [[source]]; use any of {', '.join(source_names)}")
    names = table.get("names", {})
    if not isinstance(names, dict) or not all(is_name(v) and not v.isdigit() for v in names.values()):
        raise UserError(f"{where}: `names` must map domain numbers to names ({NAME_RULE}, not only digits), "
                        "e.g. names = {3 = \"math\"}")
    if bad := [key for key in names if not (key.isdigit() and int(key) < k and str(int(key)) == key)]:
        raise UserError(f"{where}: `names` key '{bad[0]}' is not a domain number from 0 to {k - 1}")
    if repeated := [v for v in names.values() if list(names.values()).count(v) > 1]:
        raise UserError(f"{where}: `names` gives '{repeated[0]}' to two domains; each name must be unique")
    embedding = _domain_embedding(table.get("embedding", "tfidf"), where, base_dir)
    return DomainsConfig(k=k, sources=sources, sample=sample, embedding=embedding, seed=seed, names=dict(names))


def _domain_embedding(value, where: str, base_dir: Path) -> str:
    """"tfidf", or the resolved path of a local model folder that can be loaded as it is (curation.model_folders)."""
    if value == TFIDF:
        return value
    if not isinstance(value, str) or not value:
        raise UserError(f"{where}: `embedding` must be \"tfidf\" or the path of a local model folder")
    folder = (base_dir / value).resolve()
    if why := model_folders.problem(folder):
        raise UserError(f"{where}: `embedding` = {value!r} {why}")
    return str(folder)


def _parse_dedup(table, path: Path) -> DedupConfig:
    where = f"{path}: [dedup]"
    if not isinstance(table, dict):
        raise UserError(f"{where} must be a table")
    reject_unknown_keys(table, {f.name for f in fields(DedupConfig)}, where)
    config = DedupConfig(**table)
    checks = [
        (isinstance(config.enabled, bool), "`enabled` must be true or false"),
        (config.scope in ("global", "per-source"), "`scope` must be \"global\" or \"per-source\""),
        (all(is_whole_number(v) and v >= 1
             for v in (config.ngram, config.bands, config.rows, config.max_cluster_size)),
         "`ngram`, `bands`, `rows` and `max_cluster_size` must be whole numbers of at least 1"),
        (isinstance(config.seed, int), "`seed` must be a whole number"),
        (isinstance(config.threshold, (int, float)) and 0 < config.threshold <= 1, "`threshold` must be in (0, 1]"),
    ]
    for ok, message in checks:
        if not ok:
            raise UserError(f"{where}: {message}")
    return config


def _parse_quality(table, path: Path) -> QualityConfig:
    where = f"{path}: [quality]"
    if not isinstance(table, dict):
        raise UserError(f"{where} must be a table")
    reject_unknown_keys(table, QUALITY_KEYS, where)
    values = {key: string_list(table[key], f"{where} `{key}`") for key in ("positive", "negative") if key in table}
    buckets = table.get("buckets", 5)
    if not is_whole_number(buckets) or not 1 <= buckets <= 100:
        raise UserError(f"{where}: `buckets` must be a whole number from 1 to 100")
    cuts = table.get("cut_points", [])
    if not isinstance(cuts, list) or not all(isinstance(c, (int, float)) and 0 <= c <= 1 for c in cuts) \
            or list(cuts) != sorted(set(cuts)):
        raise UserError(f"{where}: `cut_points` must be ascending, distinct numbers between 0 and 1")
    return QualityConfig(**values, buckets=buckets, cut_points=tuple(float(c) for c in cuts))


def _parse_inspect(table, path: Path) -> InspectConfig:
    where = f"{path}: [inspect]"
    if not isinstance(table, dict):
        raise UserError(f"{where} must be a table")
    reject_unknown_keys(table, {f.name for f in fields(InspectConfig)}, where)
    sample = table.get("removed_sample", InspectConfig.removed_sample)
    if sample == "all":
        return InspectConfig(removed_sample=None)
    if not is_whole_number(sample) or sample < 0:
        raise UserError(f"{where}: `removed_sample` must be a whole number of documents (0 keeps none) or \"all\"")
    return InspectConfig(removed_sample=sample)


def _parse_source(entry: dict, index: int, path: Path, base_dir: Path) -> SourceConfig:
    where = f"{path}: source #{index + 1}"
    name = entry.get("name")
    if not is_name(name):
        raise UserError(f"{where}: `name` = {name!r} is invalid; use lowercase letters, digits, '_' or '-'")
    where = f"{path}: source '{name}'"
    reject_unknown_keys(entry, SOURCE_KEYS, where)
    fmt = entry.get("format")
    if fmt not in READERS:
        raise UserError(f"{where}: `format` = {fmt!r} is unknown; use one of {', '.join(READERS)}")
    values = dict(entry)
    for key in ("paths", "tags", "languages", "filters", "filter_languages", "steps"):
        if key in values:
            values[key] = string_list(values[key], f"{where}: `{key}`")
    if not values.get("paths"):
        raise UserError(f"{where}: `paths` is missing or empty; give a list of files, folders or globs")
    for key in ("text_field", "id_field"):
        if key in values and not (isinstance(values[key], str) and values[key]):
            raise UserError(f"{where}: `{key}` must be a non-empty string")
    for key in ("languages", "filter_languages"):
        wildcard = ("*",) if key == "filter_languages" else ()
        if bad := [code for code in values.get(key, ()) if not is_language(code) and code not in wildcard]:
            raise UserError(f"{where}: in `{key}`, {unknown_language(bad[0])}")
    check_references(values.get("steps", ()), where)
    bad_filters = [f for f in values.get("filters", ()) if f not in FILTERS]
    if bad_filters:
        raise UserError(f"{where}: unknown filter '{bad_filters[0]}' in `filters`; use any of {', '.join(FILTERS)}")
    options = values.get("filter_options", {})
    if not isinstance(options, dict) or any(k not in FILTERS or not isinstance(v, dict) for k, v in options.items()):
        raise UserError(f"{where}: `filter_options` must be tables named after filters ({', '.join(FILTERS)})")
    score = values.get("min_lang_score", 0.0)
    if not isinstance(score, (int, float)) or not 0.0 <= score <= 1.0:
        raise UserError(f"{where}: `min_lang_score` must be a number between 0 and 1")
    values["min_lang_score"] = float(score)
    for key, low_inclusive in (("quality_threshold", True), ("keep_fraction", False)):
        value = values.get(key)
        if value is not None and (not isinstance(value, (int, float)) or not (0 <= value <= 1) or (value == 0 and not low_inclusive)):
            raise UserError(f"{where}: `{key}` must be a number in {'[0, 1]' if low_inclusive else '(0, 1]'}")
    limit = values.get("max_doc_bytes", DEFAULT_MAX_DOC_BYTES)
    if not is_whole_number(limit) or limit < 1:
        raise UserError(f"{where}: `max_doc_bytes` must be a whole number of bytes, at least 1 (default {DEFAULT_MAX_DOC_BYTES})")
    shard_bytes = values.get("shard_bytes", DEFAULT_SHARD_BYTES)
    if not is_whole_number(shard_bytes) or shard_bytes < MIN_SHARD_BYTES:
        raise UserError(f"{where}: `shard_bytes` must be a whole number of bytes, at least {MIN_SHARD_BYTES} "
                        f"(default {DEFAULT_SHARD_BYTES}, 128 MiB)")
    storage = values.get("storage_options", {})
    if not isinstance(storage, dict) or not all(isinstance(k, str) for k in storage):
        raise UserError(f"{where}: `storage_options` must be a table of fsspec options (key, secret, endpoint_url, ...)")
    if values.get("quality_threshold") is not None and values.get("keep_fraction") is not None:
        raise UserError(f"{where}: set `quality_threshold` or `keep_fraction`, not both")
    parse_pii(values, where)
    _parse_provenance(values, where)
    source = SourceConfig(**values, base_dir=str(base_dir))
    check_pii_runs(source, where, "pii" in values)
    if unused := [name for name in options if name not in source.filters]:
        why = ("`filters` does not name it" if "filters" in values else "a source that is not web text (format "
               "html-dir or warc, or tagged \"web\") gets no filter unless `filters` names it")
        raise UserError(f"{where}: filter_options.{unused[0]} is set but {unused[0]} does not run: {why}; add "
                        f"\"{unused[0]}\" to `filters`")
    return source


def _parse_provenance(values: dict, where: str) -> None:
    """`license` normalized to SPDX's spelling (curation.licenses); `origin` and `citation` free text."""
    if "license" in values:
        values["license"] = spdx_license(values["license"], where)
    for key in ("origin", "citation"):
        if not isinstance(values.get(key, ""), str):
            raise UserError(f"{where}: `{key}` must be a string (free text: a URL, \"debian:PACKAGE=VERSION\", ...)")
