"""User evaluation sets, tokenized at compile time into the compiled folder (evals/NAME.parquet: a document per
row, its `input_ids` with EOS appended, as curation writes them), with what bits-per-byte divides by.

Bits per byte: the trainer packs a set's documents into sequences of seq_len + 1 tokens (the tail that fills no
sequence is dropped) and scores every target token (positions 1..seq_len of each sequence). bpb = the summed
nats of those tokens / ln 2 / `scored_bytes`, the UTF-8 bytes those same tokens decode to: a byte-level BPE
token's bytes are the characters of its vocabulary string (one per byte); a special token (EOS) covers none."""

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from tokenizers import Tokenizer

from base.errors import UserError
from base.inputs import expand_glob, local_file
from base.parquet_files import read_parquet, write_parquet
from base.small_files import RECORD_SUFFIXES, read_records
from base.store import as_path, is_remote
from base.workspace import Generation
from curation.tokenizer import encode_to_arrow, load_tokenizer
from mixtures.compiled import eval_file
from mixtures.heldout import source_rows
from mixtures.spec import EvalSet, MixtureSpec


def compile_evals(spec: MixtureSpec, root: Path, tokenizer: Path, gen: Generation, held_out: pa.Table,
                  out: Path) -> list[dict]:
    """Each eval set of the spec written as evals/NAME.parquet; returns what schedule.json records of them."""
    if not spec.evals:
        return []
    token_bytes = token_byte_lengths(tokenizer)
    records = []
    for e in spec.evals:
        ids = curated_tokens(e, gen, held_out) if e.source else text_tokens(e, spec, root, tokenizer)
        file = eval_file(e.name)
        write_parquet(pa.table({"input_ids": ids}), out / file)
        stream = ids.flatten().to_numpy(zero_copy_only=False).astype(np.int64)
        sequences = len(stream) // (spec.seq_len + 1)
        if sequences == 0:
            raise UserError(f"mixture '{spec.name}': eval set '{e.name}' has {len(stream)} tokens, less than one "
                            f"sequence of {spec.seq_len + 1}; give it more text")
        targets = stream[: sequences * (spec.seq_len + 1)].reshape(sequences, -1)[:, 1:]
        records.append({"name": e.name, "file": file, "from": f"source {e.source}" if e.source else e.path,
                        "documents": len(ids), "tokens": len(stream), "sequences": sequences,
                        "scored_tokens": int(targets.size), "scored_bytes": int(token_bytes[targets].sum())})
    return records


def token_byte_lengths(tokenizer: Path) -> np.ndarray:
    """The UTF-8 bytes each token id stands for (see the module's note); 0 for special tokens."""
    tok = Tokenizer.from_file(str(local_file(tokenizer)))
    special = {t.content for t in tok.get_added_tokens_decoder().values()}
    lengths = np.zeros(tok.get_vocab_size(), dtype=np.int64)
    byte_level = '"ByteLevel"' in tok.to_str()
    for token, i in tok.get_vocab().items():
        if token not in special:
            lengths[i] = len(token) if byte_level else len(tok.decode([i]).encode("utf-8"))
    return lengths


def text_tokens(e: EvalSet, spec: MixtureSpec, root: Path, tokenizer: Path) -> pa.ListArray:
    texts = read_texts(e, spec, root)
    if not texts:
        raise UserError(f"mixture '{spec.name}': eval set '{e.name}' ({e.path}) has no documents; give it a "
                        "file with at least one")
    tok, eos = load_tokenizer(str(tokenizer))
    return encode_to_arrow(tok, eos, texts)


def read_texts(e: EvalSet, spec: MixtureSpec, root: Path) -> list[str]:
    where = f"mixture '{spec.name}': eval set '{e.name}'"
    files = expand_glob(str(as_path(root) / e.path))
    if not files:
        raise UserError(f"{where}: no file at {as_path(root) / e.path}; fix `path` (relative to the workspace)")
    texts = []
    for file in files:
        if not is_remote(file) and not Path(file).resolve().is_relative_to(Path(root).resolve()):
            raise UserError(f"{where}: {file} leads outside the workspace {root}; copy the file into it")
        if not str(file).endswith(RECORD_SUFFIXES):
            raise UserError(f"{where}: {file} is not {', '.join(RECORD_SUFFIXES)}; convert it or fix `path`")
        records = read_records(file, e.text)
        missing = next((i for i, r in enumerate(records) if not isinstance(r.get(e.text), str)), None)
        if missing is not None:
            raise UserError(f"{where}: record {missing + 1} of {file} has no text field '{e.text}'; fix `text` "
                            "(the field that holds each document's text)")
        texts += [r[e.text] for r in records if r[e.text]]
    return texts


def curated_tokens(e: EvalSet, gen: Generation, held_out: pa.Table) -> pa.ListArray:
    """The held-out documents of a curated source, their input_ids as curation wrote them."""
    rows = source_rows(held_out, e.source)
    if rows.num_rows == 0:
        raise UserError(f"eval set '{e.name}': source '{e.source}' has no held-out documents in this mixture (it "
                        "must be one the weights use, with validation_tokens > 0)")
    pieces = []
    for shard in sorted(set(rows["shard"].to_pylist())):
        in_shard = rows.filter(pc.equal(rows["shard"], shard))
        ids = read_parquet(gen.root / shard, columns=["input_ids"])["input_ids"]
        pieces.append(ids.take(in_shard["row"]).combine_chunks())
    return pa.concat_arrays(pieces)
