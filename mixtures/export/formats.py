"""The formats of `loom mix export`: FORMATS maps each `--format` name to an ExportFormat, its help text, its writer
(one module per format, a FormatWriter) and the token dtype it stores for a vocabulary size.

How to add a format: a module with a FormatWriter (writer.py says what it must do; TokenFile is the append-only
token file two formats share), and one line in FORMATS."""

from dataclasses import dataclass
from typing import Callable

import numpy as np

from mixtures.export.megatron import MegatronWriter, megatron_dtype
from mixtures.export.numpy_memmap import NumpyWriter, numpy_dtype
from mixtures.export.parquet_parts import ParquetWriter
from mixtures.export.writer import FormatWriter


@dataclass(frozen=True)
class ExportFormat:
    help: str
    writer: type[FormatWriter]
    dtype: Callable[[int], np.dtype]  # the token dtype for a vocabulary size


FORMATS = {
    "megatron": ExportFormat("Megatron-LM's .bin/.idx", MegatronWriter, megatron_dtype),
    "numpy": ExportFormat("a flat token file (nanoGPT, OLMo)", NumpyWriter, numpy_dtype),
    "parquet": ExportFormat("parts of input_ids rows (HF datasets)", ParquetWriter,
                            lambda vocab_size: np.dtype(np.int32)),
}
