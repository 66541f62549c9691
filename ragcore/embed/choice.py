"""Which embedder runs: `EMBED_BACKEND` (e5, use, ollama) or `auto`, the reason (shown by doctor
and logged), the index name the choice will record, and the embedder itself.

`auto` prefers Ollama when it is up and has the model (bge-m3 is the stronger model); otherwise
the embedded e5, or the embedded USE on a CPU the e5 engine cannot run on.
"""

from __future__ import annotations

import logging

import httpx

from ragcore.core import BackendChoice, OllamaStatus, Settings, probe_ollama
from ragcore.embed.base import Embedder
from ragcore.embed.cpu import e5_unsupported
from ragcore.embed.e5 import E5_MODEL, E5_NAME, E5Embedder
from ragcore.embed.ollama import OllamaEmbedder, ollama_index_name, ollama_prefixes
from ragcore.embed.use import USE_MODEL, USEEmbedder

log = logging.getLogger(__name__)


def choose_embedding_backend(settings: Settings, status: OllamaStatus | None = None) -> BackendChoice:
    """Which backend to use and why (shown by doctor and logged). Never raises."""
    backend, model = settings.embed_backend, settings.embed_model
    if backend == "use":
        return BackendChoice("use", USE_MODEL, "EMBED_BACKEND=use", ("setting",))
    if backend == "e5":
        return BackendChoice("e5", E5_MODEL, "EMBED_BACKEND=e5", ("setting",))
    if backend == "ollama":
        return BackendChoice("ollama", model, "EMBED_BACKEND=ollama", ("setting",))
    status = status if status is not None else probe_ollama(settings.ollama_base_url)
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
    status: OllamaStatus | None = None,
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
