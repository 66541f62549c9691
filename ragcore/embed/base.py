"""What every embedder is: the `Embedder` protocol, its error and the row normalisation.

One small interface so ingestion, retrieval and the evaluation lab never care which backend
runs. It distinguishes questions from passages because retrieval models are trained with a
marker on each side (e5: "query: " / "passage: "; nomic-embed-text: "search_query: " /
"search_document: "); the embedder owns its markers, so no caller adds any. The recorded index
name (`Embedder.name`) is what `ragcore.store.database.ensure_embedding_space` compares, so
vectors of two models (or of one model with two passage prefixes) are never mixed.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np


class EmbeddingError(RuntimeError):
    """Embedding failed; the message says what to do (pull the model, start Ollama)."""


@runtime_checkable
class Embedder(Protocol):
    kind: str  # "e5" | "ollama" | "use"
    model: str
    name: str  # recorded index name, e.g. "e5-small-q4", "ollama:bge-m3", "use-multilingual-v3"
    dim: int

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Questions → (len(texts), dim) float32, each row L2-normalised."""
        ...

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        """Chunks and sentences → (len(texts), dim) float32, each row L2-normalised."""
        ...


def l2_normalise(vectors: np.ndarray) -> np.ndarray:
    vectors = np.asarray(vectors, dtype=np.float32)
    if vectors.ndim == 1:
        vectors = vectors.reshape(1, -1)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.where(norms == 0, 1.0, norms)
