"""The one place that asks an Ollama server whether it is up and which models it has."""

from __future__ import annotations

from dataclasses import dataclass

import httpx


@dataclass(frozen=True)
class OllamaStatus:
    reachable: bool
    models: tuple[str, ...] = ()
    error: str | None = None

    def has_model(self, name: str) -> bool:
        """`bge-m3` matches `bge-m3:latest`; a tagged name must match exactly."""
        wanted = name if ":" in name else f"{name}:latest"
        return any(model == name or model == wanted for model in self.models)


def probe(base_url: str, *, timeout: float = 1.5, transport: httpx.BaseTransport | None = None) -> OllamaStatus:
    """GET /api/tags: reachable or not, and the pulled models. Never raises."""
    try:
        with httpx.Client(base_url=base_url, timeout=timeout, transport=transport) as client:
            response = client.get("/api/tags")
            response.raise_for_status()
            models = tuple(m.get("name", "") for m in response.json().get("models", []))
            return OllamaStatus(True, models)
    except (httpx.HTTPError, ValueError) as exc:
        return OllamaStatus(False, (), f"{type(exc).__name__}: {exc}")
