"""HTTP clients for the language-model servers, behind the generators' streaming interface.

Ollama `/api/chat` (NDJSON stream) and an OpenAI-compatible `/v1/chat/completions` (SSE stream;
llama.cpp server, vLLM). Every failure of a remote model becomes a `GeneratorError` with a
Turkish message that says what to do.

Every answer is bounded (`ragcore.answer.bounds`): the request carries LLM_MAX_TOKENS (Ollama's
`num_predict`, OpenAI's `max_tokens`), and the client stops reading at LLM_ANSWER_SECONDS from
the request, when the server reports the token limit reached mid-answer, and when the text loops
or echoes the prompt — each an `AnswerCut`, a `GeneratorError` with the reason and the note.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import httpx

from ragcore.answer.bounds import CUT_LENGTH, CUT_TIME, AnswerWatch, cut_note
from ragcore.answer.prompt import TEMPERATURE
from ragcore.core import Settings, Source, sanitize

CONNECT_TIMEOUT = 3.0
READ_TIMEOUT = 180.0  # a 7B model on two CPU cores can take minutes for the first token
_DEFAULTS = Settings()


class GeneratorError(RuntimeError):
    """The generator could not answer; the message is Turkish and safe to show."""


class AnswerCut(GeneratorError):
    """The client stopped a model's answer on purpose: `reason` is one of `ragcore.answer.bounds.CUTS`,
    the message the Turkish note shown above the quotes that replace it."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


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


def _shut(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:  # the response ended and its socket closed first: nothing left to stop
        pass


@contextmanager
def _stopped_at(deadline: float, response: httpx.Response) -> Iterator[None]:
    """Shut the response's connection down at `deadline`, so a server that goes silent between two
    pieces cannot hold the answer past it: httpx's read timeout starts again with every read, and
    nothing in httpx bounds a whole response. The blocked read then ends, and the caller, past the
    deadline, reports the time limit."""
    stream = response.extensions.get("network_stream")
    sock = stream.get_extra_info("socket") if stream is not None else None
    if sock is None:  # an in-memory transport: the check between pieces is the bound
        yield
        return
    timer = threading.Timer(max(0.0, deadline - time.monotonic()), _shut, (sock,))
    timer.daemon = True
    timer.start()
    try:
        yield
    finally:
        timer.cancel()


class _HttpGenerator:
    """Shared error mapping for the two HTTP backends; subclasses parse their stream format."""

    kind = "http"
    server_name = "Dil modeli sunucusu"

    def __init__(self, base_url: str, model: str, *, read_timeout: float = READ_TIMEOUT,
                 max_tokens: int = _DEFAULTS.llm_max_tokens, answer_seconds: float = _DEFAULTS.llm_answer_seconds,
                 transport: httpx.BaseTransport | None = None) -> None:
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.read_timeout = read_timeout
        self.max_tokens = max_tokens
        self.answer_seconds = answer_seconds
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

    def _cut(self, reason: str) -> AnswerCut:
        return AnswerCut(reason, cut_note(reason, self.answer_seconds))

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

    def stream(self, messages: list[dict], sources: Sequence[Source], question: str, *,
               query_vector: object = None) -> Iterator[str]:
        """`query_vector` (retrieval's) is for the extractive quoter; a language model reads the text.

        Bounded (module docstring): the deadline counts from here, first token included; no single
        wait may outlast it either (the read timeout is at most LLM_ANSWER_SECONDS)."""
        url, body, headers = self._request(messages)
        deadline = time.monotonic() + self.answer_seconds
        read_timeout = min(self.read_timeout, self.answer_seconds)
        watch = AnswerWatch(messages)
        try:
            with httpx.Client(timeout=_timeout(read_timeout), transport=self.transport) as client:
                with client.stream("POST", url, json=body, headers=headers) as response:
                    if response.status_code >= 400:
                        response.read()
                        raise self._status_error(response)
                    with _stopped_at(deadline, response):
                        for piece in self._pieces(response):
                            self._within(deadline, watch.feed(piece))
                            yield piece
                    reason = watch.end()  # the last word, when the stream ended within the deadline
                    if reason is not None:
                        raise self._cut(reason)
        except httpx.ConnectError as exc:
            raise GeneratorError(
                f"{self.server_name} ({self.base_url}) çalışmıyor ya da erişilemiyor; cevap üretilemedi. "
                f"Sunucunun açık olduğunu kontrol edin. ({exc})"
            ) from exc
        except httpx.TimeoutException as exc:
            if time.monotonic() >= deadline:
                raise self._cut(CUT_TIME) from exc
            raise GeneratorError(
                f"{self.server_name} {read_timeout:.0f} saniye içinde cevap vermedi (zaman aşımı). "
                "Model çok yavaş ya da sunucu meşgul; daha sonra tekrar deneyin."
            ) from exc
        except (httpx.RemoteProtocolError, httpx.ReadError) as exc:
            if time.monotonic() >= deadline:  # `_stopped_at` shut the connection
                raise self._cut(CUT_TIME) from exc
            raise GeneratorError(f"{self.server_name} ile bağlantı cevap sırasında kesildi. ({exc})") from exc
        except httpx.HTTPError as exc:
            raise GeneratorError(f"{self.server_name} ile iletişim hatası: {exc}") from exc

    def _within(self, deadline: float, reason: str | None) -> None:
        """Stop the answer past the deadline, or when the watch found a reason."""
        if time.monotonic() >= deadline:
            raise self._cut(CUT_TIME)
        if reason is not None:
            raise self._cut(reason)

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
                "options": {"temperature": TEMPERATURE, "num_predict": self.max_tokens}}
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
                if frame.get("done_reason") == "length":  # num_predict reached: cut off mid-answer
                    raise self._cut(CUT_LENGTH)
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
        body = {"model": self.model, "messages": messages, "stream": True, "temperature": TEMPERATURE,
                "max_tokens": self.max_tokens}
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
                if isinstance(choice, dict) and choice.get("finish_reason") == "length":  # max_tokens reached
                    raise self._cut(CUT_LENGTH)

