"""A tiny Hugging Face sequence classifier saved to a folder, as save_pretrained writes a real one: a one-layer BERT
of width 16 with random weights and a word-level tokenizer over a few words. Built in seconds with nothing
downloaded, for the transformers annotator's tests and bench/gpu_check.py."""

from pathlib import Path

WORDS = ("the a of and to in is it cat dog sat on mat galaxy star telescope night bread butter garlic oven code "
         "function return value loop error").split()
SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]"]
POSITIONS = 64  # the model's max_position_embeddings: longer texts must be truncated to fit


def save_tiny_classifier(folder, labels: tuple[str, ...] | None = ("lo", "hi"), seed: int = 0) -> Path:
    """A classifier with `labels`, or with labels None a regression head (one output, problem_type "regression",
    as the FineWeb-Edu classifier). Weights drawn wide enough that texts get clearly different scores."""
    import torch
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors
    from transformers import BertConfig, BertForSequenceClassification, PreTrainedTokenizerFast
    from transformers.utils import logging

    logging.disable_progress_bar()  # no "Writing model shards" bar in a test's or the bench's output
    vocab = {token: i for i, token in enumerate(SPECIALS + WORDS)}
    tokenizer = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tokenizer.normalizer = normalizers.BertNormalizer(lowercase=True)
    tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tokenizer.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", special_tokens=[("[CLS]", vocab["[CLS]"]), ("[SEP]", vocab["[SEP]"])])
    fast = PreTrainedTokenizerFast(tokenizer_object=tokenizer, unk_token="[UNK]", pad_token="[PAD]",
                                   cls_token="[CLS]", sep_token="[SEP]")
    head = ({"num_labels": 1, "problem_type": "regression"} if labels is None else
            {"id2label": dict(enumerate(labels)), "label2id": {label: i for i, label in enumerate(labels)}})
    config = BertConfig(vocab_size=len(vocab), hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                        intermediate_size=32, max_position_embeddings=POSITIONS, initializer_range=0.5, **head)
    torch.manual_seed(seed)
    folder = Path(folder)
    BertForSequenceClassification(config).save_pretrained(folder)
    fast.save_pretrained(folder)
    return folder
