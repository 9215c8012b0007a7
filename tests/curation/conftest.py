"""Fixtures of the curation tests: a quality model trained on the bundled corpora."""

import pytest

from helpers import EXAMPLES, QUALITY_TEST_CUTOFF, built_once, run_loom


@pytest.fixture(scope="session")
def bundled_quality_model(tmp_path_factory):
    """A quality model trained on the bundled corpora: docs and code against the first fortunes shard, quantized to
    QUALITY_TEST_CUTOFF rows (the default 100,000 is quickstart's, a slow test's); trained once a session."""
    def train(folder):
        out = folder / "quality.bin"
        return out, run_loom("quality", "train", "--sources", EXAMPLES / "sources.toml", "--positive", "docs,code",
                             "--negative", EXAMPLES / "corpora" / "fortunes" / "fortunes-00000.jsonl.zst",
                             "--output", out, "--cutoff", QUALITY_TEST_CUTOFF)

    return built_once(tmp_path_factory, "quality", train)
