"""A small local HTTP server that speaks the Ollama and OpenAI-compatible APIs.

These machines cannot download model weights, so the HTTP clients are tested against this
server: real sockets, real streaming, real timeouts. Behaviour is set per test through
attributes (reply text, delays, failures) and every request body is recorded. Like a real
server it honours a request's token limit (Ollama's `options.num_predict`, OpenAI's
`max_tokens`; one streamed piece counts as one token) and says when the limit cut the reply
(`done_reason` / `finish_reason` "length"); with `forever` it never ends on its own, like a
model that does not stop.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import socket
import threading
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np


def fake_vector(text: str, dim: int) -> list[float]:
    """Deterministic unit vector per text (seeded by its hash)."""
    seed = int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "little")
    vec = np.random.default_rng(seed).standard_normal(dim)
    return (vec / np.linalg.norm(vec)).tolist()


class HashEmbedder:
    """A deterministic embedder (one seeded unit vector per text) for tests where only the
    recorded model name matters: races between uploads and re-embedding, in their own namespace."""

    kind = "hash"

    def __init__(self, name: str = "hash-64", dim: int = 64) -> None:
        self.name = self.model = name
        self.dim = dim

    def embed_passages(self, texts: list[str]) -> np.ndarray:
        return np.array([fake_vector(f"{self.name}|{t}", self.dim) for t in texts], dtype=np.float32).reshape(-1, self.dim)

    embed_queries = embed_passages


@dataclass
class FakeBehaviour:
    models: list[str] = field(default_factory=lambda: ["bge-m3:latest", "qwen2.5:7b-instruct"])
    embed_dim: int = 1024
    reply: str = "Evet, işveren risk değerlendirmesi yapmakla yükümlüdür [1]."
    reply_chunks: int = 4  # the reply is streamed in this many pieces
    delay_before_first: float = 0.0  # seconds before the first streamed piece
    delay_between: float = 0.0  # seconds between pieces
    fail_status: int | None = None  # answer every model call with this HTTP status
    fail_after_chunks: int | None = None  # drop the connection after this many pieces
    fail_first_n: int = 0  # the first n model calls answer 503, then normal (retry tests)
    malformed_after_chunks: int | None = None  # after this many pieces, one frame that is not JSON
    forever: bool = False  # after the reply, new words (" ve sürdü 1", …) until the token limit or the client leaves
    echo: str | None = None  # "system" or "user": the reply is that message of the request (a model echoing its prompt)


class FakeLLMServer:
    def __init__(self) -> None:
        self.behaviour = FakeBehaviour()
        self.requests: list[tuple[str, dict]] = []
        # What happened, in order ("sending 0", …; tests add their own): streaming is checked by the
        # order of events, never by timing. With `hold_after_first` set, the server sends the
        # first piece and waits for that event before the rest.
        self.events: list[str] = []
        self.hold_after_first: threading.Event | None = None
        self._calls = 0
        handler = _make_handler(self)
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self.httpd.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> FakeLLMServer:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def bodies(self, path: str) -> list[dict]:
        return [body for p, body in self.requests if p == path]

    def next_call_fails(self) -> bool:
        self._calls += 1
        return self._calls <= self.behaviour.fail_first_n

    def pieces(self, text: str | None = None) -> list[str]:
        """The reply (or `text`) cut into `reply_chunks` pieces."""
        text, n = self.behaviour.reply if text is None else text, max(1, self.behaviour.reply_chunks)
        size = max(1, -(-len(text) // n))
        return [text[i : i + size] for i in range(0, len(text), size)] or [""]

    def reply_to(self, body: dict) -> str:
        """The reply text for a chat request: the behaviour's reply, or the echoed message."""
        if self.behaviour.echo is None:
            return self.behaviour.reply
        return next(m["content"] for m in body.get("messages", []) if m.get("role") == self.behaviour.echo)

    def generated(self, body: dict, limit: object) -> Iterator[tuple[str, str | None]]:
        """(piece, None) for each piece this request gets, then ("", why it ended): "length" when
        the request's token limit cut the reply, else "stop"."""
        pieces: Iterable[str] = self.pieces(self.reply_to(body))
        if self.behaviour.forever:
            pieces = itertools.chain(pieces, (f" ve sürdü {i}" for i in itertools.count(1)))
        for index, piece in enumerate(pieces):
            if isinstance(limit, int) and index >= limit:
                yield "", "length"
                return
            yield piece, None
        yield "", "stop"


def _with_malformed(frames: Iterable[bytes], at: int | None, bad: bytes) -> Iterator[bytes]:
    """The frames, with `bad` sent before frame `at` (if set)."""
    for index, frame in enumerate(frames):
        if index == at:
            yield bad
        yield frame


def _openai_frames(model: str, generated: Iterable[tuple[str, str | None]]) -> Iterator[bytes]:
    """Server-sent chunks; the end of a reply the token limit cut is a chunk with finish_reason
    "length" (a reply that ended by itself goes straight to [DONE], as before that was modelled)."""
    for piece, finish in generated:
        if finish is None:
            choice = {"index": 0, "delta": {"content": piece}, "finish_reason": None}
        elif finish == "length":
            choice = {"index": 0, "delta": {}, "finish_reason": "length"}
        else:
            break
        yield b"data: " + json.dumps({"object": "chat.completion.chunk", "model": model,
                                      "choices": [choice]}).encode() + b"\n\n"
    yield b"data: [DONE]\n\n"


def _make_handler(server: FakeLLMServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: object) -> None:  # keep test output quiet
            pass

        # ---------------------------------------------------------------- helpers
        def _json(self, status: int, payload: object) -> None:
            body = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def _body(self) -> dict:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b"{}"
            data = json.loads(raw or b"{}")
            server.requests.append((self.path, data))
            return data

        def _model_known(self, model: str) -> bool:
            names = server.behaviour.models
            return model in names or f"{model}:latest" in names

        def _refuse(self, model: str, openai: bool) -> bool:
            b = server.behaviour
            if server.next_call_fails():
                self._json(503, {"error": "temporarily unavailable"})
                return True
            if b.fail_status is not None:
                self._json(b.fail_status, {"error": "internal error"})
                return True
            if not self._model_known(model):
                message = f"model '{model}' not found, try pulling it first"
                self._json(404, {"error": {"message": message}} if openai else {"error": message})
                return True
            return False

        def _stream(self, frames: Iterable[bytes], content_type: str) -> None:
            self.send_response(200)
            self.send_header("Content-Type", content_type)
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            try:
                self._send_frames(frames)
            except (BrokenPipeError, ConnectionResetError):  # the client stopped reading (a cut answer)
                server.events.append("client gone")
                self.close_connection = True

        def _send_frames(self, frames: Iterable[bytes]) -> None:
            b = server.behaviour
            time.sleep(b.delay_before_first)
            for index, frame in enumerate(frames):
                if b.fail_after_chunks is not None and index >= b.fail_after_chunks:
                    # Drop the TCP connection mid-stream (the client sees an incomplete body).
                    self.wfile.flush()
                    self.connection.shutdown(socket.SHUT_RDWR)
                    self.close_connection = True
                    return
                if index:
                    time.sleep(b.delay_between)
                if index == 1 and server.hold_after_first is not None:
                    server.hold_after_first.wait(10)  # bounded: a client that never reads still ends
                server.events.append(f"sending {index}")  # before the write: the client cannot be earlier
                self.wfile.write(f"{len(frame):x}\r\n".encode() + frame + b"\r\n")
                self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")

        # ---------------------------------------------------------------- routes
        def do_GET(self) -> None:
            if self.path == "/api/tags":
                self._json(200, {"models": [{"name": m} for m in server.behaviour.models]})
            elif self.path == "/v1/models":
                self._json(200, {"data": [{"id": m} for m in server.behaviour.models]})
            else:
                self._json(404, {"error": "not found"})

        def do_POST(self) -> None:
            body = self._body()
            model = body.get("model", "")
            if self.path == "/api/embed":
                if self._refuse(model, openai=False):
                    return
                inputs = body.get("input", [])
                inputs = [inputs] if isinstance(inputs, str) else inputs
                time.sleep(server.behaviour.delay_before_first)
                vectors = [fake_vector(t, server.behaviour.embed_dim) for t in inputs]
                self._json(200, {"model": model, "embeddings": vectors})
            elif self.path == "/api/chat":
                if self._refuse(model, openai=False):
                    return
                limit = (body.get("options") or {}).get("num_predict")
                frames = (
                    json.dumps({"model": model, "message": {"role": "assistant", "content": p}, "done": finish is not None}
                               | ({"done_reason": finish} if finish else {})).encode() + b"\n"
                    for p, finish in server.generated(body, limit)
                )
                # a line cut off mid-object
                frames = _with_malformed(frames, server.behaviour.malformed_after_chunks, b'{"model": "x", "message": {"cont\n')
                if body.get("stream", True):
                    self._stream(frames, "application/x-ndjson")
                else:
                    self._json(200, {"model": model, "message": {"role": "assistant",
                                                                 "content": server.behaviour.reply}, "done": True})
            elif self.path == "/v1/chat/completions":
                if self._refuse(model, openai=True):
                    return
                frames = _with_malformed(_openai_frames(model, server.generated(body, body.get("max_tokens"))),
                                         server.behaviour.malformed_after_chunks, b'data: {"choices": [{"delta": \n\n')
                self._stream(frames, "text/event-stream")
            else:
                self._json(404, {"error": "not found"})

    return Handler
