"""Text to vectors: the embedding backends (Ollama, e5, USE), the choice among them and their
index names, and the content-addressed cache every vector goes through.
"""

from ragcore.embed import embeddings
from ragcore.embed.cache import (
    CachedEmbedder,
    EmbeddingCacheError,
    text_key,
)
from ragcore.embed.embeddings import (
    E5Embedder,
    Embedder,
    EmbeddingError,
    OllamaEmbedder,
    USEEmbedder,
    choose_embedding_backend,
    default_prefixes,
    index_name,
    make_embedder,
)

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
    "embeddings",
    "index_name",
    "make_embedder",
    "text_key",
]
