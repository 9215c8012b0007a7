"""Tiny Hugging Face sequence classifiers saved to a folder, as save_pretrained writes real ones: a one-layer BERT
(or GPT-2, whose tokenizer has no padding token) of width 16 with random weights and a word-level tokenizer over a
few words. Built in seconds with nothing downloaded, for the transformers annotator's tests and
bench/gpu_check.py."""

from pathlib import Path

WORDS = ("the a of and to in is it cat dog sat on mat galaxy star telescope night bread butter garlic oven code "
         "function return value loop error").split()
SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[EOS]"]
POSITIONS = 64  # the model's max_position_embeddings: longer texts must be truncated to fit
WIDTH = {"hidden_size": 16, "num_hidden_layers": 1, "num_attention_heads": 2}


def save_tiny_classifier(folder, labels: tuple[str, ...] | None = ("lo", "hi"), seed: int = 0,
                         decoder: bool = False) -> Path:
    """A classifier with `labels`, or with labels None a regression head (one output, problem_type "regression",
    as the FineWeb-Edu classifier); `decoder`: a GPT-2 that scores a text by its last token and whose tokenizer
    has no padding token. Weights drawn wide enough that texts get clearly different scores."""
    import torch
    from transformers import (BertConfig, BertForSequenceClassification, GPT2Config, GPT2ForSequenceClassification,
                              PreTrainedTokenizerFast)
    from transformers.utils import logging

    logging.disable_progress_bar()  # no "Writing model shards" bar in a test's or the bench's output
    vocab = {token: i for i, token in enumerate(SPECIALS + WORDS)}
    head = ({"num_labels": 1, "problem_type": "regression"} if labels is None else
            {"id2label": dict(enumerate(labels)), "label2id": {label: i for i, label in enumerate(labels)}})
    if decoder:
        fast = PreTrainedTokenizerFast(tokenizer_object=words_tokenizer(vocab, template=False), unk_token="[UNK]",
                                       eos_token="[EOS]")
        config = GPT2Config(vocab_size=len(vocab), n_embd=16, n_layer=1, n_head=2, n_positions=POSITIONS,
                            initializer_range=0.5, bos_token_id=vocab["[EOS]"], eos_token_id=vocab["[EOS]"], **head)
        architecture = GPT2ForSequenceClassification
    else:
        fast = PreTrainedTokenizerFast(tokenizer_object=words_tokenizer(vocab, template=True), unk_token="[UNK]",
                                       pad_token="[PAD]", cls_token="[CLS]", sep_token="[SEP]")
        config = BertConfig(vocab_size=len(vocab), intermediate_size=32, max_position_embeddings=POSITIONS,
                            initializer_range=0.5, **WIDTH, **head)
        architecture = BertForSequenceClassification
    torch.manual_seed(seed)
    folder = Path(folder)
    architecture(config).save_pretrained(folder)
    fast.save_pretrained(folder)
    return folder


def words_tokenizer(vocab: dict[str, int], template: bool):
    """Lowercased words, one token each ([UNK] for others); `template`: BERT's [CLS] text [SEP]."""
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors

    tokenizer = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tokenizer.normalizer = normalizers.BertNormalizer(lowercase=True)
    tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    if template:
        tokenizer.post_processor = processors.TemplateProcessing(
            single="[CLS] $A [SEP]", special_tokens=[("[CLS]", vocab["[CLS]"]), ("[SEP]", vocab["[SEP]"])])
    return tokenizer
