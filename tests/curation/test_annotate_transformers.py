"""The transformers annotator kind (curation/steps/annotate/transformers.py) on tiny models the tests build and save
themselves (tests/tiny_classifier.py: random weights, nothing downloaded): its scores against the model's own
forward pass, its checks' one-line refusals, its digest, and that loading opens no connection."""

import json
import shutil

import pytest

from base.errors import UserError
from curation import model_folders
from curation.steps.annotate import transformers as kind
from curation.steps.annotate.kinds import AnnotatorConfig
from curation.steps.annotate.transformers import TRANSFORMERS
from tiny_classifier import POSITIONS, save_tiny_classifier

TEXTS = ["the cat sat on the mat", "galaxy star telescope night", "bread butter garlic oven", "",
         "code function return value loop error", "a dog", "the oven is on and the bread is in it"]


@pytest.fixture(scope="module")
def classifier(tmp_path_factory):
    return save_tiny_classifier(tmp_path_factory.mktemp("models") / "classifier")


@pytest.fixture(scope="module")
def regression(tmp_path_factory):
    return save_tiny_classifier(tmp_path_factory.mktemp("models") / "regression", labels=None)


def annotator(model, **settings) -> AnnotatorConfig:
    return AnnotatorConfig(name="edu", kind="transformers", model=str(model), **settings)


def forward_one_by_one(folder, texts, max_length=POSITIONS):
    """Each text's logits from the model alone, unbatched and unpadded: what the annotator must reproduce."""
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(folder, local_files_only=True)
    model = AutoModelForSequenceClassification.from_pretrained(folder, local_files_only=True).eval()
    with torch.inference_mode():
        return [model(**tokenizer(text, truncation=True, max_length=max_length, return_tensors="pt")).logits[0]
                for text in texts]


def test_scores_are_the_labels_probability_in_order_across_batches(classifier):
    config = annotator(classifier, label="hi", batch_size=3)  # 7 texts: batches of 3, 3 and 1, sorted by length
    assert TRANSFORMERS.check(config) is None
    scores = TRANSFORMERS.load(config).scores(TEXTS)
    expected = [float(logits.softmax(-1)[1]) for logits in forward_one_by_one(classifier, TEXTS)]
    assert all(type(score) is float and 0 <= score <= 1 for score in scores)
    assert scores == pytest.approx(expected, abs=1e-5)
    assert len({round(score, 3) for score in scores}) == len(TEXTS)  # distinct: a mixed-up order would show
    lo = TRANSFORMERS.load(annotator(classifier, label="lo", batch_size=2)).scores(TEXTS)
    assert [a + b for a, b in zip(scores, lo)] == pytest.approx([1.0] * len(TEXTS), abs=1e-5)


def test_a_regression_head_scores_its_raw_output_without_a_label(regression):
    config = annotator(regression, batch_size=4)
    assert TRANSFORMERS.check(config) is None
    scores = TRANSFORMERS.load(config).scores(TEXTS)
    assert scores == pytest.approx([float(logits[0]) for logits in forward_one_by_one(regression, TEXTS)], abs=1e-5)
    assert any(not 0 <= score <= 1 for score in scores)  # a raw output, not a probability
    assert TRANSFORMERS.load(config).scores([]) == []


def test_a_multi_label_model_scores_its_labels_sigmoid(tmp_path, classifier):
    multi = tmp_path / "multi"
    shutil.copytree(classifier, multi)
    settings = json.loads((multi / "config.json").read_text())
    (multi / "config.json").write_text(json.dumps({**settings, "problem_type": "multi_label_classification"}))
    scores = TRANSFORMERS.load(annotator(multi, label="hi")).scores(TEXTS)
    assert scores == pytest.approx([float(logits[1].sigmoid()) for logits in forward_one_by_one(multi, TEXTS)],
                                   abs=1e-5)


def test_a_decoder_without_a_padding_token_scores_each_text_as_alone(tmp_path):
    gpt2 = save_tiny_classifier(tmp_path / "gpt2", decoder=True)  # scores a text by its last token
    scorer = TRANSFORMERS.load(annotator(gpt2, label="hi", batch_size=3))
    scores = scorer.scores(TEXTS)
    worded = [i for i, text in enumerate(TEXTS) if text]
    expected = [float(logits.softmax(-1)[1]) for logits in forward_one_by_one(gpt2, [TEXTS[i] for i in worded])]
    assert [scores[i] for i in worded] == pytest.approx(expected, abs=1e-5)
    # a text of no tokens (GPT-2's tokenizer adds none of its own) scores the same beside others or in a batch of
    # such texts alone, where the model would have no token at all to read
    assert scorer.scores(["", "   "]) == pytest.approx([scores[TEXTS.index("")]] * 2, abs=1e-6)


def test_texts_longer_than_max_length_are_truncated(classifier):
    long_texts = ["the galaxy " * 400, "bread " * 5 + "cat " * 1000]  # thousands of tokens; the model has 64 positions
    short = TRANSFORMERS.load(annotator(classifier, label="hi", max_length=8)).scores(long_texts)
    expected = [float(logits.softmax(-1)[1]) for logits in forward_one_by_one(classifier, long_texts, max_length=8)]
    assert short == pytest.approx(expected, abs=1e-5)
    scorer = TRANSFORMERS.load(annotator(classifier, label="hi"))  # max_length 512, beyond the model's positions
    assert scorer.max_length == POSITIONS and len(scorer.scores(long_texts)) == 2


def test_on_the_cpu_the_model_runs_on_one_torch_thread_and_leaves_them_as_they_were(classifier):
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(2)  # as a worker process would have on a machine of several cores
    try:
        scorer = TRANSFORMERS.load(annotator(classifier, label="hi", batch_size=3))
        seen = []
        scorer.model.register_forward_pre_hook(lambda module, args: seen.append(torch.get_num_threads()))
        scorer.scores(TEXTS)
        assert seen == [1, 1, 1] and torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(threads)


def wrong_settings(tmp_path, classifier, regression):
    """(config, words the one line must hold) for each wrong setting."""
    empty = tmp_path / "empty"
    empty.mkdir()
    no_config = tmp_path / "no-config"
    shutil.copytree(classifier, no_config)
    (no_config / "config.json").unlink()
    encoder = tmp_path / "encoder"
    shutil.copytree(classifier, encoder)
    settings = json.loads((encoder / "config.json").read_text())
    (encoder / "config.json").write_text(json.dumps({**settings, "architectures": ["BertModel"]}))
    garbled = tmp_path / "garbled"
    shutil.copytree(classifier, garbled)
    (garbled / "config.json").write_text("{not json")
    return [
        (annotator(tmp_path / "nowhere", label="hi"), ["is not a folder", "local Hugging Face model folder"]),
        (annotator(classifier / "config.json", label="hi"), ["is not a folder"]),
        (annotator(empty, label="hi"), ["lacks its config (config.json)", "nothing is"]),
        (annotator(no_config, label="hi"), ["lacks its config (config.json)"]),
        (annotator(garbled, label="hi"), ["config.json is not a model's config", "save_pretrained"]),
        (annotator(encoder, label="hi"), ["BertModel, not a sequence classifier", "ForSequenceClassification"]),
        (annotator(classifier, label="high"), ["label 'high' is not one of the model's labels ('lo', 'hi')"]),
        (annotator(classifier), ["has 2 labels ('lo', 'hi'): set label"]),
        (annotator(regression, label="LABEL_0"), ["regression head", "remove label = 'LABEL_0'"]),
        (annotator(classifier, label="hi", max_length=0), ["set them to whole numbers, 1 or more"]),
        (annotator(classifier, label="hi", batch_size="64"), ["set them to whole numbers, 1 or more"]),
    ]


def test_each_wrong_setting_is_one_line_naming_the_annotator_and_the_fix(tmp_path, classifier, regression):
    for config, words in wrong_settings(tmp_path, classifier, regression):
        line = TRANSFORMERS.check(config)
        assert line is not None and "\n" not in line, config
        assert line.startswith("annotator 'edu' (kind = \"transformers\"): ")
        for word in words:
            assert word in line, (word, line)


def test_without_transformers_installed_the_check_names_the_extra(classifier, monkeypatch):
    find_spec = kind.importlib.util.find_spec
    monkeypatch.setattr(kind.importlib.util, "find_spec",
                        lambda name, *args: None if name == "transformers" else find_spec(name, *args))
    line = TRANSFORMERS.check(annotator(classifier, label="hi"))
    assert "needs the transformers package: pip install 'loom[transformers]'" in line


def test_a_folder_whose_weights_do_not_load_is_one_line_at_load(tmp_path, classifier):
    broken = tmp_path / "broken"
    shutil.copytree(classifier, broken)
    (broken / "model.safetensors").write_bytes(b"not safetensors")
    config = annotator(broken, label="hi")
    assert TRANSFORMERS.check(config) is None  # the check reads no weights
    with pytest.raises(UserError) as err:
        TRANSFORMERS.load(config)
    assert "cannot be loaded from its own files" in str(err.value) and "\n" not in str(err.value)


def test_the_digest_is_the_folders_bytes(tmp_path, classifier):
    copy = tmp_path / "copy"
    shutil.copytree(classifier, copy)
    assert TRANSFORMERS.digest(annotator(copy)) == TRANSFORMERS.digest(annotator(classifier))
    assert TRANSFORMERS.digest(annotator(copy)) == model_folders.digest(classifier)
    weights = copy / "model.safetensors"
    data = weights.read_bytes()
    weights.write_bytes(data[:-1] + bytes([data[-1] ^ 1]))  # one bit of a weight
    assert TRANSFORMERS.digest(annotator(copy)) != TRANSFORMERS.digest(annotator(classifier))


def test_checking_loading_and_scoring_open_no_connection(classifier, connections_tried):
    config = annotator(classifier, label="hi")
    assert TRANSFORMERS.check(config) is None
    assert len(TRANSFORMERS.load(config).scores(TEXTS)) == len(TEXTS)
    assert connections_tried == []
