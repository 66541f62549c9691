"""Text to vectors: the embedding backends (Ollama, e5, USE), the choice among them and their
index names, and the content-addressed cache every passage vector goes through (questions
are embedded afresh on every call: see ragcore.embed.cache).
"""

from ragcore.embed.base import Embedder, EmbeddingError
from ragcore.embed.cache import (
    CachedEmbedder,
    EmbeddingCacheError,
    text_key,
    uncached_passages,
)
from ragcore.embed.choice import (
    choose_embedding_backend,
    index_name,
    make_embedder,
)
from ragcore.embed.e5 import E5Embedder
from ragcore.embed.ollama import OllamaEmbedder, default_prefixes
from ragcore.embed.use import USEEmbedder

__all__ = [
    "CachedEmbedder",
    "E5Embedder",
    "Embedder",
    "EmbeddingCacheError",
    "EmbeddingError",
    "OllamaEmbedder",
    "USEEmbedder",
    "choose_embedding_backend",
    "default_prefixes",
    "index_name",
    "make_embedder",
    "text_key",
    "uncached_passages",
]
