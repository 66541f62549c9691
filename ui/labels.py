"""Turkish names for the technical values the UI shows: retrieval modes, evidence signals,
model backends, and where a measured default came from.

The values themselves stay English identifiers (settings, logs, the CLI, JSON files); the UI
shows them through these tables, so no "weighted" or "auto: Ollama not reachable …" reaches
a Turkish reader.
"""

from __future__ import annotations

from ragcore.core import formatting

MODE_LABELS = {
    "auto": "Otomatik (ayarlardaki mod)",
    "rrf": "Sıra birleştirme (RRF): vektör + BM25",
    "weighted": "Ağırlıklı birleştirme: vektör + BM25",
    "dense": "Yalnız vektör benzerliği",
    "lexical": "Yalnız sözcük eşleşmesi (BM25)",
}
MODE_SHORT = {
    "rrf": "Sıra birleştirme",
    "weighted": "Ağırlıklı",
    "dense": "Vektör",
    "lexical": "BM25",
}
SIGNAL_LABELS = {
    "cosine": "en iyi kosinüs benzerliği",
    "coverage": "soru terimlerinin kapsanma oranı",
    "max": "kosinüs ile kapsamanın büyüğü",
    "mean": "kosinüs ile kapsamanın ortalaması",
    "min": "kosinüs ile kapsamanın küçüğü",
}
EMBEDDER_LABELS = {
    "e5": "gömülü e5",
    "use": "gömülü USE",
    "ollama": "Ollama",
}
GENERATOR_LABELS = {
    "extractive": "alıntı modu (dil modeli yok)",
    "ollama": "Ollama",
    "openai": "OpenAI uyumlu sunucu",
}


def mode_label(mode: str) -> str:
    return MODE_LABELS.get(mode, mode)


def mode_short(mode: str) -> str:
    return MODE_SHORT.get(mode, mode)


def signal_label(signal: str) -> str:
    return SIGNAL_LABELS.get(signal, signal)


def threshold_origin(measured: str, calibrated: bool) -> str:
    """Where a refusal threshold's value comes from, in Turkish."""
    if measured == "REFUSAL_THRESHOLD":
        return "REFUSAL_THRESHOLD ayarından"
    if calibrated:
        return "bu gömme modeli için ölçülerek belirlendi (ragcore/measured/thresholds.json)"
    return "bu model için ölçülmedi: modelden bağımsız varsayılan (ragcore/measured/thresholds.json)"


def threshold_text(signal: str, value: float, origin: str) -> str:
    """"soru terimlerinin kapsanma oranı ≥ 0,450 (…)"."""
    return f"{signal_label(signal)} ≥ {formatting.number(value)} ({origin})"
