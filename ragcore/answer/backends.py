"""Which answer generator to use, and making it.

Three backends behind one streaming interface (`Generator`): Ollama and an OpenAI-compatible
server (`ragcore.answer.llm_clients`) and the extractive quoter of `ragcore.answer.extractive`,
which needs no model at all — the embedded default, so Dayanak answers with citations on a
machine with no LLM. `LLM_BACKEND` names one; `auto` probes for a model server. Every
language-model answer of the product (chat, API, CLI, the lab) comes from a generator made here,
so each carries the bounds of LLM_MAX_TOKENS and LLM_ANSWER_SECONDS.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from typing import Any, Protocol

import httpx

from ragcore.answer.extractive import ExtractiveGenerator
from ragcore.answer.llm_clients import (
    READ_TIMEOUT,
    GeneratorError,
    OllamaGenerator,
    OpenAIGenerator,
    openai_endpoint,
)
from ragcore.core import BackendChoice, OllamaStatus, Settings, Source, probe_ollama

log = logging.getLogger(__name__)

PROBE_TIMEOUT = 1.5


class Generator(Protocol):
    """What the answer service streams from: the HTTP clients and the extractive quoter alike."""

    kind: str
    model: str
    label: str

    def stream(self, messages: list[dict], sources: Sequence[Source], question: str, *,
               query_vector: Any = None) -> Iterator[str]: ...


def _openai_reachable(settings: Settings, transport: httpx.BaseTransport | None) -> tuple[bool, str]:
    url = openai_endpoint(settings.openai_base_url or "", "/models")
    headers = {"Authorization": f"Bearer {settings.openai_api_key}"} if settings.openai_api_key else {}
    try:
        with httpx.Client(timeout=PROBE_TIMEOUT, transport=transport) as client:
            client.get(url, headers=headers).raise_for_status()
        return True, ""
    except httpx.HTTPError as exc:
        return False, f"{type(exc).__name__}: {exc}"


def choose_generator_backend(
    settings: Settings, status: OllamaStatus | None = None, *, transport: httpx.BaseTransport | None = None
) -> BackendChoice:
    """Explicit LLM_BACKEND wins; auto takes Ollama with LLM_MODEL, else the OpenAI server, else quoting."""
    backend = settings.llm_backend
    if backend == "extractive":
        return BackendChoice("extractive", "extractive", "LLM_BACKEND=extractive", ("setting",))
    if backend == "ollama":
        return BackendChoice("ollama", settings.llm_model, "LLM_BACKEND=ollama", ("setting",))
    if backend == "openai":
        return BackendChoice("openai", settings.llm_model, "LLM_BACKEND=openai", ("setting",))
    status = status or probe_ollama(settings.ollama_base_url, transport=transport)
    if status.reachable and status.has_model(settings.llm_model):
        return BackendChoice("ollama", settings.llm_model, f"auto: Ollama has {settings.llm_model}",
                             ("ollama_has_model",))
    ollama_why = (f"Ollama has no {settings.llm_model} (ollama pull {settings.llm_model})" if status.reachable
                  else "Ollama not reachable")
    causes: tuple[str, ...] = ("ollama_missing_model" if status.reachable else "ollama_unreachable",)
    if settings.openai_base_url:
        ok, why = _openai_reachable(settings, transport)
        if ok:
            return BackendChoice("openai", settings.llm_model, f"auto: {ollama_why}; OpenAI-compatible server reachable",
                                 (*causes, "openai_reachable"))
        ollama_why += f"; OpenAI-compatible server not reachable ({why})"
        causes += ("openai_unreachable",)
    return BackendChoice("extractive", "extractive", f"auto: {ollama_why}; quoting passages without an LLM", causes)


def make_generator(
    settings: Settings,
    embedder: object | None,
    status: OllamaStatus | None = None,
    transport: httpx.BaseTransport | None = None,
    *,
    read_timeout: float = READ_TIMEOUT,
) -> Generator:
    """The generator the settings (and, for auto, the probe) call for."""
    choice = choose_generator_backend(settings, status, transport=transport)
    log.info("generator: %s / %s (%s)", choice.kind, choice.model, choice.reason)
    # Every language-model answer of the product (chat, API, CLI, the lab) is made here: bounded here.
    if choice.kind == "ollama":
        return OllamaGenerator(settings.ollama_base_url, choice.model, read_timeout=read_timeout,
                               max_tokens=settings.llm_max_tokens, answer_seconds=settings.llm_answer_seconds,
                               transport=transport)
    if choice.kind == "openai":
        if not settings.openai_base_url:
            raise GeneratorError("LLM_BACKEND=openai seçili ama OPENAI_BASE_URL tanımlı değil.")
        return OpenAIGenerator(settings.openai_base_url, choice.model, api_key=settings.openai_api_key,
                               read_timeout=read_timeout, max_tokens=settings.llm_max_tokens,
                               answer_seconds=settings.llm_answer_seconds, transport=transport)
    return ExtractiveGenerator(embedder)
