"""Answer generators behind one streaming interface, and what happens to their text afterwards.

Three backends: Ollama `/api/chat` (NDJSON stream), an OpenAI-compatible
`/v1/chat/completions` (SSE stream; llama.cpp server, vLLM) and the extractive quoter of
`ragcore.answer.extractive`, which needs no model at all — the embedded default, so Dayanak answers
with citations on a machine with no LLM. Every failure of a remote model becomes a
`GeneratorError` with a Turkish message that says what to do.

After generation `finalize` parses the [n] markers, drops those pointing outside the context,
and tells a real refusal (the fallback sentence) from an instruction echo (the model repeating
its rules, which is unreliable and replaced by quoted passages).
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Protocol

import httpx

from ragcore.answer.extractive import ExtractiveGenerator
from ragcore.answer.prompt import SYSTEM_PROMPT, TEMPERATURE
from ragcore.core import (
    FALLBACK_ANSWER,
    BackendChoice,
    Settings,
    Source,
    ollama,
    sanitize,
    turkish_lower,
    words,
)

log = logging.getLogger(__name__)

CONNECT_TIMEOUT = 3.0
READ_TIMEOUT = 180.0  # a 7B model on two CPU cores can take minutes for the first token
PROBE_TIMEOUT = 1.5


class GeneratorError(RuntimeError):
    """The generator could not answer; the message is Turkish and safe to show."""


class Generator(Protocol):
    kind: str
    model: str
    label: str

    def stream(self, messages: list[dict], sources: Sequence[Source], question: str) -> Iterator[str]: ...


# ----------------------------------------------------------------------------- HTTP backends


def _timeout(read: float) -> httpx.Timeout:
    return httpx.Timeout(connect=CONNECT_TIMEOUT, read=read, write=30.0, pool=CONNECT_TIMEOUT)


def _error_text(response: httpx.Response) -> str:
    """The server's error message from an already-read error response."""
    try:
        payload = response.json()
    except ValueError:
        return response.text[:300]
    error = payload.get("error", payload) if isinstance(payload, dict) else payload
    if isinstance(error, dict):
        error = error.get("message", error)
    return str(error)[:300]


class _HttpGenerator:
    """Shared error mapping for the two HTTP backends; subclasses parse their stream format."""

    kind = "http"
    server_name = "Dil modeli sunucusu"

    def __init__(self, base_url: str, model: str, *, read_timeout: float = READ_TIMEOUT,
                 transport: httpx.BaseTransport | None = None) -> None:
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.read_timeout = read_timeout
        self.transport = transport

    @property
    def label(self) -> str:
        return f"{self.kind}:{self.model}"

    def _request(self, messages: list[dict]) -> tuple[str, dict, dict]:
        raise NotImplementedError

    def _pieces(self, response: httpx.Response) -> Iterator[str]:
        raise NotImplementedError

    def _missing_model(self) -> str:
        return f"'{self.model}' modeli {self.server_name} üzerinde yok."

    def _frame(self, text: str) -> dict:
        """One JSON object of the stream; anything else is a broken server, said in Turkish."""
        try:
            frame = json.loads(text)
        except ValueError:
            frame = None
        if not isinstance(frame, dict):
            raise GeneratorError(f"{self.server_name} anlaşılamayan bir cevap gönderdi (bozuk akış verisi: "
                                 f"{text[:80]!r}); cevap tamamlanamadı.")
        return frame

    def stream(self, messages: list[dict], sources: Sequence[Source], question: str) -> Iterator[str]:
        url, body, headers = self._request(messages)
        try:
            with httpx.Client(timeout=_timeout(self.read_timeout), transport=self.transport) as client:
                with client.stream("POST", url, json=body, headers=headers) as response:
                    if response.status_code >= 400:
                        response.read()
                        raise self._status_error(response)
                    yield from self._pieces(response)
        except httpx.ConnectError as exc:
            raise GeneratorError(
                f"{self.server_name} ({self.base_url}) çalışmıyor ya da erişilemiyor; cevap üretilemedi. "
                f"Sunucunun açık olduğunu kontrol edin. ({exc})"
            ) from exc
        except httpx.TimeoutException as exc:
            raise GeneratorError(
                f"{self.server_name} {self.read_timeout:.0f} saniye içinde cevap vermedi (zaman aşımı). "
                "Model çok yavaş ya da sunucu meşgul; daha sonra tekrar deneyin."
            ) from exc
        except (httpx.RemoteProtocolError, httpx.ReadError) as exc:
            raise GeneratorError(f"{self.server_name} ile bağlantı cevap sırasında kesildi. ({exc})") from exc
        except httpx.HTTPError as exc:
            raise GeneratorError(f"{self.server_name} ile iletişim hatası: {exc}") from exc

    def _status_error(self, response: httpx.Response) -> GeneratorError:
        text = _error_text(response)
        if response.status_code == 404 and "not found" in text.lower():
            return GeneratorError(self._missing_model())
        return GeneratorError(f"{self.server_name} hata döndürdü (HTTP {response.status_code}): {text}")


class OllamaGenerator(_HttpGenerator):
    """Ollama /api/chat, streamed as NDJSON: one JSON object per line, `done` on the last."""

    kind = "ollama"
    server_name = "Ollama"

    def _missing_model(self) -> str:
        return f"'{self.model}' modeli Ollama'da yüklü değil. Yüklemek için: ollama pull {self.model}"

    def _request(self, messages: list[dict]) -> tuple[str, dict, dict]:
        body = {"model": self.model, "messages": messages, "stream": True,
                "options": {"temperature": TEMPERATURE}}
        return f"{self.base_url}/api/chat", body, {}

    def _pieces(self, response: httpx.Response) -> Iterator[str]:
        for line in response.iter_lines():
            if not line.strip():
                continue
            frame = self._frame(line)
            if frame.get("error"):
                raise GeneratorError(f"Ollama hata döndürdü: {frame['error']}")
            content = _field(frame, "message", "content")
            if isinstance(content, str) and content:
                yield sanitize(content)
            if frame.get("done"):
                return


def _field(value: object, *path: str) -> object:
    """value[path[0]][path[1]]…, or None where a level is missing or not an object."""
    for key in path:
        value = value.get(key) if isinstance(value, dict) else None
    return value


def openai_endpoint(base_url: str, path: str) -> str:
    """OPENAI_BASE_URL may be given with or without the /v1 suffix."""
    base = base_url.rstrip("/")
    return f"{base}{path}" if base.endswith("/v1") else f"{base}/v1{path}"


class OpenAIGenerator(_HttpGenerator):
    """OpenAI-compatible /v1/chat/completions, streamed as server-sent events."""

    kind = "openai"
    server_name = "OpenAI uyumlu sunucu"

    def __init__(self, base_url: str, model: str, *, api_key: str | None = None, **kwargs: object) -> None:
        super().__init__(base_url, model, **kwargs)  # type: ignore[arg-type]
        self.api_key = api_key

    def _request(self, messages: list[dict]) -> tuple[str, dict, dict]:
        body = {"model": self.model, "messages": messages, "stream": True, "temperature": TEMPERATURE}
        headers = {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}
        return openai_endpoint(self.base_url, "/chat/completions"), body, headers

    def _pieces(self, response: httpx.Response) -> Iterator[str]:
        for line in response.iter_lines():
            if not line.startswith("data:"):
                continue
            data = line[5:].strip()
            if data == "[DONE]":
                return
            frame = self._frame(data)
            if frame.get("error"):
                raise GeneratorError(f"OpenAI uyumlu sunucu hata döndürdü: {frame['error']}")
            for choice in frame.get("choices") or []:
                content = _field(choice, "delta", "content")
                if isinstance(content, str) and content:
                    yield sanitize(content)


# ----------------------------------------------------------------------------- after generation

_MARKER = re.compile(r"\[(\d+(?:\s*[,;]\s*\d+)*)\]")
_ECHO_PHRASES = (
    "numaralandırılmış bağlam", "köşeli parantez", "kendi bilgini", "genel kültür",
    "şu cümleyi aynen", "talimatları", "kurallar:", "sen dayanak",
)

KIND_ANSWER = "answer"
KIND_REFUSAL = "refusal"
KIND_ECHO = "echo"
KIND_EMPTY = "empty"


@dataclass(frozen=True)
class Finalized:
    text: str
    kind: str  # answer | refusal | echo | empty
    cited: tuple[int, ...]  # 1-based context numbers, in order of first citation


def parse_citations(text: str, n_sources: int) -> tuple[str, tuple[int, ...]]:
    """Keep markers 1..n_sources (in order of first use); remove the others from the text."""
    cited: list[int] = []

    def replace(match: re.Match) -> str:
        numbers = [int(x) for x in re.split(r"\s*[,;]\s*", match.group(1))]
        valid = [x for x in numbers if 1 <= x <= n_sources]
        for x in valid:
            if x not in cited:
                cited.append(x)
        return "".join(f"[{x}]" for x in valid)

    cleaned = _MARKER.sub(replace, text)
    cleaned = re.sub(r"[ \t]+([.,;:])", r"\1", cleaned)
    return cleaned.strip(), tuple(cited)


def _ngrams(tokens: list[str], n: int = 3) -> set[tuple[str, ...]]:
    return {tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1)}


_PROMPT_NGRAMS = _ngrams(words(SYSTEM_PROMPT.replace(FALLBACK_ANSWER, " "))) - _ngrams(words(FALLBACK_ANSWER))
_FALLBACK_WORDS = words(FALLBACK_ANSWER)


def is_instruction_echo(text: str) -> bool:
    """The model repeated its rules (seed 002): phrases or 3-grams of the system prompt."""
    lowered = turkish_lower(text)
    if sum(phrase in lowered for phrase in _ECHO_PHRASES) >= 2:
        return True
    grams = _ngrams(words(text))
    return len(grams) >= 4 and len(grams & _PROMPT_NGRAMS) / len(grams) >= 0.4


def is_refusal(text: str) -> bool:
    """The fallback sentence with (almost) nothing else: a real refusal, not an answer."""
    tokens = words(text)
    if not tokens:
        return False
    joined, fallback = " ".join(tokens), " ".join(_FALLBACK_WORDS)
    if fallback in joined:
        return len(tokens) - len(_FALLBACK_WORDS) <= 6
    return "bulunmuyor" in tokens and len(tokens) <= len(_FALLBACK_WORDS) + 4


def finalize(text: str, sources: Sequence[Source]) -> Finalized:
    """Classify generated text and clean its citations (refusal and echo checks come first)."""
    if not text.strip():
        return Finalized("", KIND_EMPTY, ())
    if is_instruction_echo(text):
        return Finalized(text.strip(), KIND_ECHO, ())
    cleaned, cited = parse_citations(text, len(sources))
    if is_refusal(re.sub(r"\[\d+\]", " ", cleaned)):
        return Finalized(FALLBACK_ANSWER, KIND_REFUSAL, ())
    return Finalized(cleaned, KIND_ANSWER, cited)


# ----------------------------------------------------------------------------- choice


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
    settings: Settings, status: ollama.OllamaStatus | None = None, *, transport: httpx.BaseTransport | None = None
) -> BackendChoice:
    """Explicit LLM_BACKEND wins; auto takes Ollama with LLM_MODEL, else the OpenAI server, else quoting."""
    backend = settings.llm_backend
    if backend == "extractive":
        return BackendChoice("extractive", "extractive", "LLM_BACKEND=extractive", ("setting",))
    if backend == "ollama":
        return BackendChoice("ollama", settings.llm_model, "LLM_BACKEND=ollama", ("setting",))
    if backend == "openai":
        return BackendChoice("openai", settings.llm_model, "LLM_BACKEND=openai", ("setting",))
    status = status or ollama.probe(settings.ollama_base_url, transport=transport)
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
    status: ollama.OllamaStatus | None = None,
    transport: httpx.BaseTransport | None = None,
    *,
    read_timeout: float = READ_TIMEOUT,
) -> Generator:
    """The generator the settings (and, for auto, the probe) call for."""
    choice = choose_generator_backend(settings, status, transport=transport)
    log.info("generator: %s / %s (%s)", choice.kind, choice.model, choice.reason)
    if choice.kind == "ollama":
        return OllamaGenerator(settings.ollama_base_url, choice.model, read_timeout=read_timeout, transport=transport)
    if choice.kind == "openai":
        if not settings.openai_base_url:
            raise GeneratorError("LLM_BACKEND=openai seçili ama OPENAI_BASE_URL tanımlı değil.")
        return OpenAIGenerator(settings.openai_base_url, choice.model, api_key=settings.openai_api_key,
                               read_timeout=read_timeout, transport=transport)
    return ExtractiveGenerator(embedder)
