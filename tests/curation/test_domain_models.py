"""Topic domains embedded by a local model folder (curation.model_folders): a model2vec folder and a
sentence-transformers folder, each built here with random weights (nothing downloaded), through the estimator,
the [domains] checks and one curate of the slice each."""

import json
import shutil
import sys
from types import SimpleNamespace

import numpy as np
import pyarrow.parquet as pq
import pytest

from base.errors import UserError
from curation import model_folders
from curation.domains import DomainModel
from helpers import curate_tiny, published, run_loom
from test_domains import ASTRONOMY, ASTRONOMY_WORDS, COOKING, COOKING_WORDS, SOURCES

COMMON_WORDS = ("the and with of to in is that for it as was be by on not this are or from at which but have an "
                "they you were her she there been one all we their has would when if so no out what up said about "
                "into more than them can only other new some time could these two may first then do any like a "
                "seen through night").split()
DIMS = 16


def topic_vectors(vocab: list[str], dims: int = DIMS) -> np.ndarray:
    """Random vectors, each topic's words around a topic centre of their own, so that the topics separate."""
    rng = np.random.default_rng(0)
    centres = {"cooking": rng.normal(size=dims), "astronomy": rng.normal(size=dims)}
    topic = {**dict.fromkeys(COOKING_WORDS, "cooking"), **dict.fromkeys(ASTRONOMY_WORDS, "astronomy")}
    vectors = [3 * centres[topic[w]] + rng.normal(size=dims) if w in topic else rng.normal(size=dims) for w in vocab]
    return np.asarray(vectors, dtype=np.float32)


def words_tokenizer(specials: list[str], words: list[str], model: str):
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers

    vocab = {t: i for i, t in enumerate(specials + words)}
    build = models.WordLevel if model == "wordlevel" else models.WordPiece
    tokenizer = Tokenizer(build(vocab, unk_token="[UNK]"))
    tokenizer.normalizer = normalizers.BertNormalizer(lowercase=True)
    tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    return tokenizer


WORDS = sorted(set(COOKING_WORDS + ASTRONOMY_WORDS + COMMON_WORDS))


def build_model2vec(folder):
    """A model2vec StaticModel: a word-level tokenizer and one random vector per word."""
    from model2vec import StaticModel

    tokenizer = words_tokenizer(["[PAD]", "[UNK]"], WORDS, "wordlevel")
    vectors = np.concatenate([np.zeros((2, DIMS), np.float32), topic_vectors(WORDS)])
    StaticModel(vectors, tokenizer).save_pretrained(folder)
    return folder


def build_sentence_transformer(folder):
    """A one-layer BERT of width 16 (random weights, its word embeddings set to topic vectors), a WordPiece
    tokenizer over the words, mean pooling."""
    import torch
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import Pooling, Transformer
    from tokenizers import processors
    from transformers import BertConfig, BertModel, BertTokenizerFast

    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    tokenizer = words_tokenizer(specials, WORDS, "wordpiece")
    tokenizer.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B [SEP]", special_tokens=[("[CLS]", 2), ("[SEP]", 3)])
    fast = BertTokenizerFast(tokenizer_object=tokenizer, unk_token="[UNK]", pad_token="[PAD]", cls_token="[CLS]",
                             sep_token="[SEP]", mask_token="[MASK]")
    torch.manual_seed(0)
    bert = BertModel(BertConfig(vocab_size=len(specials) + len(WORDS), hidden_size=DIMS, num_hidden_layers=1,
                                num_attention_heads=2, intermediate_size=32, max_position_embeddings=128))
    with torch.no_grad():
        bert.embeddings.word_embeddings.weight[len(specials):] = torch.from_numpy(topic_vectors(WORDS))
    parts = folder.parent / f"{folder.name}-parts"
    bert.save_pretrained(parts)
    fast.save_pretrained(parts)
    transformer = Transformer(str(parts), max_seq_length=128)
    model = SentenceTransformer(modules=[transformer, Pooling(DIMS, "mean")], device="cpu")
    model.save(str(folder))
    shutil.rmtree(parts)
    return folder


BUILDERS = {model_folders.MODEL2VEC: build_model2vec, model_folders.SENTENCE_TRANSFORMERS: build_sentence_transformer}


@pytest.fixture(scope="module", params=sorted(BUILDERS))
def model_folder(request, tmp_path_factory):
    return BUILDERS[request.param](tmp_path_factory.mktemp("models") / request.param)  # named as its kind


def test_the_folder_kinds_are_told_apart(model_folder, tmp_path):
    assert model_folders.kind(model_folder) == model_folder.name
    assert model_folders.problem(model_folder) is None
    assert model_folders.kind(tmp_path) is None and "is not a model folder" in model_folders.problem(tmp_path)


def test_two_obvious_topics_separate_and_top_terms_name_them(model_folder):
    model = DomainModel(k=2, seed=0, embedding=str(model_folder)).fit(COOKING + ASTRONOMY)
    domains, distances = model.predict(COOKING + ASTRONOMY)
    assert domains.dtype == np.int32 and distances.dtype == np.float32
    assert len(set(domains[:12])) == 1 and len(set(domains[12:])) == 1 and domains[0] != domains[12]
    assert ((0 <= distances) & (distances <= 2)).all()
    assert model.centres.shape == (2, DIMS) and model.components is None  # the model's vectors, no SVD
    assert set(model.top_terms(5)[domains[0]]) <= set(COOKING_WORDS)
    assert set(model.top_terms(5)[domains[12]]) <= set(ASTRONOMY_WORDS)
    new, _ = model.predict(["a galaxy seen through the telescope at night", "garlic butter on the bread"])
    assert list(new) == [domains[12], domains[0]]


def test_same_folder_texts_and_seed_give_the_same_model_and_load_keeps_it(model_folder, tmp_path):
    first, second = (DomainModel(k=2, seed=3, embedding=str(model_folder)).fit(COOKING + ASTRONOMY)
                     for _ in range(2))
    assert first.digest == second.digest != DomainModel(k=2, seed=3).fit(COOKING + ASTRONOMY).digest
    first.save(tmp_path / "domains")
    loaded = DomainModel.load(tmp_path / "domains")
    assert loaded.digest == first.digest and loaded.embedding == str(model_folder)
    for a, b in zip(loaded.predict(COOKING + [""]), first.predict(COOKING + [""])):
        assert np.array_equal(a, b)


def test_a_folder_changed_since_the_fit_is_refused_in_one_line(model_folder, tmp_path):
    folder = tmp_path / "model"
    shutil.copytree(model_folder, folder)
    fitted = DomainModel(k=2, seed=0, embedding=str(folder)).fit(COOKING + ASTRONOMY)
    fitted.save(tmp_path / "domains")
    weights = folder / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:-1] + bytes([weights.read_bytes()[-1] ^ 1]))  # one bit of a weight
    with pytest.raises(UserError) as err:
        DomainModel.load(tmp_path / "domains")
    assert "changed since the domains were fitted" in str(err.value) and "\n" not in str(err.value)
    assert DomainModel(k=2, seed=0, embedding=str(folder)).embedding_digest != fitted.embedding_digest


def test_loading_a_folder_opens_no_connection(model_folder, connections_tried):
    assert model_folders.Encoder(model_folder).encode(["the galaxy"]).shape == (1, DIMS)
    assert connections_tried == []


def test_the_folder_digest_enters_the_stage_fingerprint(model_folder, tmp_path):
    from curation.config import load_config
    from curation.stages.domains import DOMAINS

    folder = tmp_path / "model"
    shutil.copytree(model_folder, folder)
    (tmp_path / "sources.toml").write_text(f'{SOURCES}\n[domains]\nk = 2\nembedding = "model"\n')
    ctx = SimpleNamespace(config=load_config(tmp_path / "sources.toml"))
    assert ctx.config.domains.embedding == str(folder)
    before = DOMAINS.inputs(ctx)
    (folder / "config.json").write_text((folder / "config.json").read_text() + "\n")
    assert DOMAINS.inputs(ctx) != before


def sources_with(tmp_path, embedding: str) -> str:
    (tmp_path / "sources.toml").write_text(f'{SOURCES}\n[domains]\nk = 2\nembedding = "{embedding}"\n')
    from curation.config import load_config

    with pytest.raises(UserError) as err:
        load_config(tmp_path / "sources.toml")
    assert "\n" not in str(err.value) and str(err.value).startswith(f"{tmp_path / 'sources.toml'}: [domains]: ")
    return str(err.value)


def test_a_sentence_transformers_folder_that_needs_a_download_is_one_line(tmp_path):
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "modules.json").write_text(json.dumps([
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"}]))
    assert "lacks the folder" in sources_with(tmp_path, "model") and "1_Pooling" in sources_with(tmp_path, "model")
    (folder / "1_Pooling").mkdir()
    (folder / "config.json").write_text("{}")
    (folder / "tokenizer.json").write_text("{}")
    message = sources_with(tmp_path, "model")
    assert "lacks its Transformer module's weights (model.safetensors or" in message
    assert "would have to be downloaded" in message


def test_a_model2vec_folder_missing_its_tokenizer_or_a_broken_module_list_is_one_line(tmp_path):
    folder = tmp_path / "model"
    (folder / "0_StaticEmbedding").mkdir(parents=True)
    (folder / "0_StaticEmbedding" / "model.safetensors").write_bytes(b"")
    (folder / "modules.json").write_text(json.dumps([
        {"idx": 0, "name": "0", "path": "0_StaticEmbedding", "type": "sentence_transformers.models.StaticEmbedding"}]))
    assert "lacks its StaticEmbedding module's tokenizer (tokenizer.json in" in sources_with(tmp_path, "model")
    (folder / "modules.json").write_text('{"type": ')
    assert "has a modules.json that is not a list of sentence-transformers modules (" in sources_with(tmp_path,
                                                                                                     "model")


def test_without_sentence_transformers_installed_a_folder_is_one_line(tmp_path, monkeypatch):
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "modules.json").write_text(json.dumps([{"idx": 0, "name": "0", "path": "", "type": "Transformer"}]))
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)  # what find_spec reports for a missing package
    assert sources_with(tmp_path, "model").endswith(
        "`embedding` = 'model' is a sentence-transformers folder, which needs the sentence-transformers package: "
        "pip install 'loom[embeddings]'")


@pytest.mark.slow  # a curate of its own each (~20 s with model2vec, ~35 s with sentence-transformers)
@pytest.mark.parametrize("model_folder", [model_folders.MODEL2VEC, model_folders.SENTENCE_TRANSFORMERS], indirect=True)
def test_one_curate_of_the_slice_with_a_model_folder(model_folder, tmp_path, slice_sources, slice_tokenizer):
    """About as long as the TF-IDF curate of test_domains.py with model2vec; torch's import in every worker makes
    the sentence-transformers one longer (slow)."""
    from base.workspace import DOMAIN_SETTINGS_FILE, Workspace
    from curation.stages.domains import DOMAINS

    root = tmp_path / "slice"
    shutil.copytree(slice_sources.parent, root)
    sources = root / "sources.toml"
    sources.write_text(sources.read_text() + f'\n[domains]\nk = 3\nsources = ["web"]\nembedding = "{model_folder}"\n')
    ws = tmp_path / "ws"
    run_loom("-w", ws, "curate", "--sources", sources, "--tokenizer", slice_tokenizer, "--workers", 2)
    gen = published(ws)
    rows = pq.read_table(gen / "curated", columns=["source", "domain"]).to_pylist()
    assert all((r["domain"] is not None) == (r["source"] == "web") for r in rows)
    assert {r["domain"] for r in rows if r["source"] == "web"} <= {0, 1, 2}
    info = json.loads((gen / "manifest" / "curation.json").read_text())["domains"]
    settings = json.loads((DOMAINS.model_folder(Workspace(ws)) / DOMAIN_SETTINGS_FILE).read_text())
    assert settings["embedding_path"] == str(model_folder)
    assert settings["embedding_digest"] == model_folders.digest(model_folder)
    assert settings["embedding"] == model_folder.name
    assert {d["model_digest"] for d in pq.read_table(gen / "manifest" / "domains.parquet").to_pylist()} == {
        info["model_digest"]}


@pytest.mark.slow  # a curate whose workers start and fail (~10 s); the folder checks before compute run by default
def test_a_folder_that_fails_to_load_stops_loom_curate_in_one_line(tmp_path, slice_tokenizer):
    """It passes the checks at config load (its files are there), so the fit's worker finds it out."""
    folder = tmp_path / "model"
    folder.mkdir()
    for name in model_folders.MODEL2VEC_FILES:
        (folder / name).write_text("{}")
    result = curate_tiny(tmp_path, slice_tokenizer, 4, '[domains]\nk = 2\nembedding = "model"\n')
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
    assert result.stderr.strip().splitlines()[-1].startswith(
        f"error: [domains]: the model2vec folder {folder} cannot be loaded from its own files (")
