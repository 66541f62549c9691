"""Embeddings from an Ollama server (`POST /api/embed`): bge-m3 is the stronger model, so
`EMBED_BACKEND=auto` prefers it when Ollama is up and has it. Each known model gets the (query,
passage) markers it was trained with, and the passage marker is part of the recorded index name.
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections.abc import Sequence

import httpx
import numpy as np

from ragcore.core import Settings
from ragcore.embed.base import EmbeddingError, l2_normalise

log = logging.getLogger(__name__)

# Dimensions of common Ollama embedding models, so the index can be created before any call.
KNOWN_DIMS: dict[str, int] = {
    "bge-m3": 1024,
    "nomic-embed-text": 768,
    "mxbai-embed-large": 1024,
    "snowflake-arctic-embed": 1024,
    "snowflake-arctic-embed2": 1024,
    "all-minilm": 384,
    "paraphrase-multilingual": 768,
}
# (query prefix, passage prefix) each Ollama model was trained with, from the model cards.
# Unknown models get none; EMBED_QUERY_PREFIX / EMBED_PASSAGE_PREFIX override these.
_REPRESENT = "Represent this sentence for searching relevant passages: "
KNOWN_PREFIXES: dict[str, tuple[str, str]] = {
    "bge-m3": ("", ""),
    "nomic-embed-text": ("search_query: ", "search_document: "),
    "mxbai-embed-large": (_REPRESENT, ""),
    "snowflake-arctic-embed": (_REPRESENT, ""),
    # Arctic Embed 2.0's model card uses "query: " (the v1 instruction is for the English v1 models).
    "snowflake-arctic-embed2": ("query: ", ""),
}
E5_PREFIXES = ("query: ", "passage: ")  # multilingual e5 models served by Ollama (any namespace/size)
# Connecting fails fast (Ollama down); a batch of long texts on a CPU may take a while.
DEFAULT_TIMEOUT = httpx.Timeout(120.0, connect=3.0)


def _base_model(model: str) -> str:
    """"jeffh/intfloat-multilingual-e5-large:f16" → "intfloat-multilingual-e5-large"."""
    return model.rpartition("/")[2].partition(":")[0]


def default_prefixes(model: str) -> tuple[str, str]:
    """The (query, passage) prefixes an Ollama model was trained with; ("", "") when unknown."""
    base = _base_model(model)
    if base in KNOWN_PREFIXES:
        return KNOWN_PREFIXES[base]
    if "multilingual-e5" in base:
        return E5_PREFIXES
    return ("", "")


def ollama_prefixes(model: str, settings: Settings | None = None) -> tuple[str, str]:
    """The prefixes in force: EMBED_QUERY_PREFIX / EMBED_PASSAGE_PREFIX, else the model's default."""
    query, passage = default_prefixes(model)
    if settings is not None and settings.embed_query_prefix is not None:
        query = settings.embed_query_prefix
    if settings is not None and settings.embed_passage_prefix is not None:
        passage = settings.embed_passage_prefix
    return query, passage


def ollama_index_name(model: str, passage_prefix: str) -> str:
    """`ollama:<model>`, plus a short hash of the passage prefix when there is one.

    The passage prefix changes every stored vector, so it is part of the name: an index built
    with another prefix (or with none, as before prefixes existed) is refused instead of mixed.
    The query prefix changes only the question's vector, so it is not.
    """
    if not passage_prefix:
        return f"ollama:{model}"
    return f"ollama:{model}+p={hashlib.sha256(passage_prefix.encode('utf-8')).hexdigest()[:8]}"


class OllamaEmbedder:
    """POST /api/embed in batches, with timeouts and retries with backoff on 5xx and timeouts."""

    kind = "ollama"

    def __init__(
        self,
        base_url: str,
        model: str = "bge-m3",
        *,
        query_prefix: str | None = None,
        passage_prefix: str | None = None,
        batch_size: int = 16,
        retries: int = 3,
        backoff: float = 0.5,
        timeout: httpx.Timeout | float = DEFAULT_TIMEOUT,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.model = model
        default_query, default_passage = default_prefixes(model)
        self.query_prefix = default_query if query_prefix is None else query_prefix
        self.passage_prefix = default_passage if passage_prefix is None else passage_prefix
        self.name = ollama_index_name(model, self.passage_prefix)
        self.batch_size = batch_size
        self.retries = retries
        self.backoff = backoff
        self._client = httpx.Client(base_url=self.base_url, timeout=timeout, transport=transport)
        base, _, tag = model.partition(":")
        self._dim: int | None = KNOWN_DIMS.get(base) if tag in ("", "latest") else None

    @property
    def dim(self) -> int:
        """From the known table, else discovered with one small request."""
        if self._dim is None:
            self._dim = int(self._request(["boyut"]).shape[1])
        return self._dim

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self._embed([self.query_prefix + text for text in texts])

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        return self._embed([self.passage_prefix + text for text in texts])

    def _embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        parts = [self._request(list(texts[i : i + self.batch_size])) for i in range(0, len(texts), self.batch_size)]
        vectors = np.vstack(parts)
        if self._dim is None:
            self._dim = int(vectors.shape[1])
        elif vectors.shape[1] != self._dim:
            raise EmbeddingError(f"Ollama {self.model} {vectors.shape[1]} boyutlu vektör döndürdü, {self._dim} bekleniyordu.")
        return vectors

    def _request(self, batch: list[str]) -> np.ndarray:
        last: Exception | None = None
        for attempt in range(self.retries + 1):
            if attempt:
                time.sleep(self.backoff * 2 ** (attempt - 1))
            try:
                response = self._client.post("/api/embed", json={"model": self.model, "input": batch})
            except (httpx.ConnectError, httpx.TimeoutException, httpx.RemoteProtocolError) as exc:
                last = exc
                log.warning("Ollama embed attempt %d failed: %s", attempt + 1, exc)
                continue
            if response.status_code == 404:
                raise EmbeddingError(
                    f"Ollama'da '{self.model}' modeli yok. Sunucuda indirin: `ollama pull {self.model}` "
                    "(ya da EMBED_BACKEND=e5 ile gömülü modeli kullanın)."
                )
            if response.status_code >= 500 or response.status_code == 429:
                last = httpx.HTTPStatusError(f"HTTP {response.status_code}", request=response.request, response=response)
                log.warning("Ollama embed attempt %d: HTTP %d", attempt + 1, response.status_code)
                continue
            if response.status_code != 200:
                raise EmbeddingError(f"Ollama gömme isteği reddedildi (HTTP {response.status_code}): {response.text[:200]}")
            return self._vectors(response, len(batch))
        if isinstance(last, httpx.HTTPStatusError):
            raise EmbeddingError(
                f"Ollama {self.retries + 1} denemede de hata verdi ({last}); sunucu günlüğüne bakın ({self.base_url})."
            ) from last
        raise EmbeddingError(
            f"Ollama'ya ulaşılamıyor ({self.base_url}): {type(last).__name__}. Ollama'yı başlatın "
            "(`ollama serve`) ya da EMBED_BACKEND=e5 ile gömülü modeli kullanın."
        ) from last

    def _vectors(self, response: httpx.Response, expected: int) -> np.ndarray:
        try:
            vectors = np.asarray(response.json()["embeddings"], dtype=np.float32)
        except (ValueError, KeyError, TypeError) as exc:
            raise EmbeddingError(f"Ollama beklenmeyen bir yanıt döndürdü: {response.text[:200]}") from exc
        if vectors.ndim != 2 or vectors.shape[0] != expected:
            raise EmbeddingError(f"Ollama {expected} metin için {vectors.shape[0] if vectors.ndim else 0} vektör döndürdü.")
        return l2_normalise(vectors)

    def close(self) -> None:
        self._client.close()
