"""Each extension point is one map from a name to an object: a dummy filter, format (reader), annotator kind,
surrogate, design and export format is registered in its map alone, by this file, and shows in the CLI's `--help`
and works: a curation reads with the dummy reader, filters with the dummy filter and annotates with the dummy kind, a search draws its proxies with the dummy design and
fits the dummy surrogate, an export writes the dummy format."""

import json
import os
import textwrap

import numpy as np
import pytest

from helpers import REPO, TOY_LADDER, copy_curated, published, run_loom, training_spec, write_spec
from base.workspace import Workspace
from loom.cli.commands import cli
from mixtures.export.writer import FormatWriter

# Registered in every process of `loom` (Dask workers too): a sitecustomize on PYTHONPATH, run at start-up.
DUMMY_CURATION = '''
from curation.document import Record
from curation.readers import READERS, Format
from curation.steps.annotate import ANNOTATORS, AnnotatorKind
from curation.steps.filters import FILTERS, Filter


class LinesReader:
    """A document per line of a text file."""
    shard_kind, html = "file", False

    def check(self, source, shard):
        pass

    def read(self, source, shard, span=None):
        with open(shard, encoding="utf-8") as lines:
            for index, line in enumerate(lines):
                yield Record(index=index, text=line.strip(), meta={})


class NoShouting:
    def filter(self, doc):
        return (False, "shouting") if doc.text.isupper() else True


class Lengths:
    def __init__(self, config):
        pass

    def scores(self, texts):
        return [float(len(text)) for text in texts]


READERS["dummy-lines"] = Format("a document per line of a text file", LinesReader())
ANNOTATORS["dummy_length"] = AnnotatorKind("a text's length in characters", keys=(), required=(),
                                           check=lambda config: None, digest=lambda config: "1", load=Lengths)
FILTERS["dummy_shouting"] = Filter("documents in capitals", lambda options, words: NoShouting())
'''
LINES = [f"Line {i} is a sentence of ordinary words about the weather in the valley and the river." for i in range(6)]
SHOUTED = ["THIS WHOLE LINE IS WRITTEN IN CAPITAL LETTERS AND SAYS NOTHING AT ALL OF ANY USE TO ANYONE"]


def run(argv: list, capsys) -> str:
    """`loom ARGV` in this process (what this file registered is seen), and what it printed."""
    cli.main([str(a) for a in argv], prog_name="loom", standalone_mode=False)
    return capsys.readouterr().out


def help_of(argv: list, capsys) -> str:
    """`loom ARGV --help` in this process, its lines joined (click wraps an option's help)."""
    return " ".join(run([*argv, "--help"], capsys).split())


def test_a_dummy_reader_and_filter_show_in_curates_help_and_curate(tmp_path, slice_tokenizer):
    (tmp_path / "site").mkdir()
    (tmp_path / "site" / "sitecustomize.py").write_text(DUMMY_CURATION)
    (tmp_path / "notes.txt").write_text("\n".join(LINES + LINES[:1] + SHOUTED) + "\n")  # an exact copy too
    (tmp_path / "sources.toml").write_text(textwrap.dedent('''
        [[source]]
        name = "notes"
        format = "dummy-lines"
        paths = ["notes.txt"]
        filters = ["dummy_shouting"]
        filter_languages = ["*"]
        [dedup]
        enabled = false
        [[annotate]]
        name = "length"
        kind = "dummy_length"
    '''))
    env = {"PYTHONPATH": os.pathsep.join([str(tmp_path / "site"), str(REPO), os.environ.get("PYTHONPATH", "")])}
    shown = run_loom("curate", "--help", env=env).stdout
    assert "dummy-lines" in shown and "a document per line of a text file" in shown
    assert "dummy_shouting" in shown and "documents in capitals" in shown
    assert "dummy_length" in shown and "a text's length in characters" in shown
    ws = tmp_path / "ws"
    run_loom("-w", ws, "curate", "--sources", tmp_path / "sources.toml", "--tokenizer", slice_tokenizer,
             "--workers", 1, env=env)
    import pyarrow.parquet as pq

    funnel = pq.read_table(published(ws) / "manifest" / "funnel").to_pylist()
    fates = sorted((r["record"], r["fate"], r["stage"], r["reason"]) for r in funnel)
    assert fates == [(i, "kept", "", None) for i in range(len(LINES))] + \
        [(len(LINES), "duplicate", "exact_dedup", "exact_duplicate"),
         (len(LINES) + 1, "filtered", "dummy_shouting", "shouting")]
    curated = pq.read_table(published(ws) / "curated", columns=["text", "length", "dup_count", "dup_cluster"]).to_pylist()
    assert [row["length"] for row in curated] == [len(row["text"]) for row in curated] == [len(line) for line in LINES]
    # [dedup] enabled = false: MinHash dedup does not run at all; exact dedup does, and dup_count counts its copies
    assert not (ws / "work" / "minhash").exists() and not (ws / "work" / "minhash_dedup").exists()
    assert [row["dup_count"] for row in curated] == [2] + [1] * (len(LINES) - 1)
    assert {row["dup_cluster"] for row in curated} == {None}
    assert pq.read_table(published(ws) / "manifest" / "dedup_clusters.parquet").num_rows == 0


class DummyLaw:
    """t . w by least squares (as `linear`), under its own name and formulas."""
    help = "a test's law"
    law = "y = t . x (dummy)"
    search_law = "L = t . w (dummy)"
    intercept, positive = False, False

    def fit(self, X, y, start=None):
        return 0.0, np.linalg.lstsq(X, y, rcond=None)[0]

    def predict(self, intercepts, slopes, X):
        return np.asarray(X, dtype=float) @ slopes.T

    def jacobian(self, intercepts, slopes, x):
        return slopes.copy()


@pytest.fixture
def dummy_search(tmp_path, curated_slice, slice_tokenizer, monkeypatch):
    from sweeps.search_space import DESIGNS, Design, distinct_feasible
    from sweeps.surrogate import SURROGATES

    drawn = []

    def first_draws(space, rng, count, concentration):  # uniform draws, the first `count` within the caps
        drawn.append(distinct_feasible(space, rng, [np.ones(len(k)) for k in space.keys], count, count * 200))
        return drawn[-1]

    monkeypatch.setitem(DESIGNS, "dummy", Design("the first uniform draws within the caps", first_draws))
    monkeypatch.setitem(SURROGATES, "dummy", DummyLaw())
    ws = copy_curated(curated_slice, slice_tokenizer, tmp_path / "ws")
    write_spec(ws, "toymix", "max_epochs = 64\n" + training_spec(10))
    (tmp_path / "toy.toml").write_text(TOY_LADDER)
    return ws, tmp_path / "toy.toml", drawn


def test_a_dummy_design_and_surrogate_show_in_the_search_help_and_plan_and_fit_a_search(dummy_search, capsys):
    from mixtures import find_spec, load_spec
    from sweeps.ladder import vocabulary
    from sweeps.search_plan import SearchOptions, plan_search
    from sweeps.search_results import choose, header
    from sweeps.spec import load_ladder_spec

    ws, ladder, drawn = dummy_search
    shown = help_of(["mix", "search"], capsys)
    assert "dummy: the first uniform draws within the caps" in shown and "dummy: a test's law" in shown
    printed = run(["-w", ws, "mix", "search", "toys", "--from", "toymix", "--ladder", ladder, "--proxies", 6,
                   "--target-tokens", 61_440, "--design", "dummy", "--surrogate", "dummy", "--dry-run"], capsys)
    assert len(drawn) == 1 and len(drawn[0]) == 6 and "Designs" in printed
    assert f"{drawn[0][0][0]:.3f}" in printed  # the table shows the dummy's first mixture
    # the fit of a finished search, on losses made up as a known linear function of the weights
    options = SearchOptions(6, "dummy", 1.0, "natural", (), "val_loss", "dummy", 0.05, 0, None, False, None, 61_440)
    base = load_spec(find_spec("toymix", ws / "mixtures", ws / "mixtures"))
    plan = plan_search(Workspace(ws), "toys", base, load_ladder_spec(ladder), options, vocabulary(Workspace(ws), base))
    assert np.array_equal(plan.designs, np.array(drawn[-1]))
    truth = np.array([3.0, 4.0, 5.0, 6.0])
    proxies = [{"name": f"p{i}", "objective": float(x @ truth), "metrics": {"val_loss": float(x @ truth)}}
               for i, x in enumerate(plan.designs)]
    results = {**header(plan, options), "proxies": proxies, "baselines": {k: {} for k in plan.baselines}}
    choose(plan, options, proxies, results)
    assert results["surrogate"]["model"] == "dummy" and results["surrogate"]["law"] == "L = t . w (dummy)"
    assert results["surrogate"]["held_out"]["mean_abs_error"] < 1e-9  # the law is the truth
    assert plan.within_caps(np.array(results["chosen"]["vector"]))


class TextWriter(FormatWriter):
    """Each sequence as a line of token ids."""

    def files(self):
        return ["tokens.txt"]

    def resume(self, state):
        self.folder.mkdir(parents=True, exist_ok=True)
        with open(self.folder / "tokens.txt", "a") as file:
            file.truncate(state["bytes"] if state else 0)

    def write(self, first_step, tokens, steps):
        with open(self.folder / "tokens.txt", "a") as file:
            file.writelines(" ".join(map(str, row)) + "\n" for row in tokens)

    def state(self):
        return {"bytes": (self.folder / "tokens.txt").stat().st_size}


def test_a_dummy_export_format_shows_in_the_exports_help_and_exports(tmp_path, curated_slice, slice_tokenizer,
                                                                     monkeypatch, capsys):
    from mixtures.export.formats import FORMATS, ExportFormat

    monkeypatch.setitem(FORMATS, "dummy-text", ExportFormat("token ids as text", TextWriter,
                                                            lambda vocab_size: np.dtype(np.int32)))
    assert "dummy-text: token ids as text" in help_of(["mix", "export"], capsys)
    ws = copy_curated(curated_slice, slice_tokenizer, tmp_path / "ws")
    write_spec(ws, "toymix", training_spec(4))
    run(["-w", ws, "mix", "build", "toymix"], capsys)
    run(["-w", ws, "mix", "export", "toymix", "--format", "dummy-text"], capsys)
    out = ws / "exports" / "toymix" / "dummy-text"
    info = json.loads((out / "export.json").read_text())
    rows = (out / "tokens.txt").read_text().splitlines()
    assert info["format"] == "dummy-text" and len(rows) == info["sequences"] > 0
    assert {len(row.split()) for row in rows} == {info["tokens_per_sequence"]}
