"""Turkish names for the technical values the UI shows: retrieval modes, evidence signals,
model backends, and where a measured default came from.

The values themselves stay English identifiers (settings, logs, the CLI, JSON files); the UI
shows them through these tables, so no "weighted" or "auto: Ollama not reachable …" reaches
a Turkish reader. Method names (RRF, BM25) appear only in help texts and "Teknik ayrıntılar".
"""

from __future__ import annotations

from ragcore.core import format_number

MODE_LABELS = {
    "auto": "Otomatik (ayarlardaki mod)",
    "rrf": "Sıra birleştirme: vektör + sözcük",
    "weighted": "Ağırlıklı birleştirme: vektör + sözcük",
    "dense": "Yalnız vektör benzerliği",
    "lexical": "Yalnız sözcük eşleşmesi",
}
MODE_SHORT = {
    "rrf": "Sıra birleştirme",
    "weighted": "Ağırlıklı",
    "dense": "Vektör",
    "lexical": "Sözcük",
}
# The method behind each mode, for a help text (the names a technician looks up).
MODE_METHODS = {
    "rrf": "RRF (reciprocal rank fusion) ile vektör ve BM25 sıralamaları birleştirilir.",
    "weighted": "Vektör ve BM25 skorları ölçülmüş bir ağırlıkla toplanır.",
    "dense": "Yalnız vektör (kosinüs) benzerliği.",
    "lexical": "Yalnız BM25 sözcük eşleşmesi.",
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


def modes_help(modes: tuple[str, ...] | list[str]) -> str:
    """One help text naming the method behind each mode ("Sıra birleştirme: RRF …")."""
    return "\n\n".join(f"{MODE_SHORT[m]}: {MODE_METHODS[m]}" for m in modes if m in MODE_METHODS)


def signal_label(signal: str) -> str:
    return SIGNAL_LABELS.get(signal, signal)


def threshold_origin(measured: str, calibrated: bool) -> str:
    """Where a refusal threshold's value comes from, in Turkish."""
    if measured == "REFUSAL_THRESHOLD":
        return "yönetici ayarından"
    if calibrated:
        return "bu arama modeli için ölçülerek belirlendi"
    return "bu model için ölçülmedi: modelden bağımsız varsayılan"


def threshold_text(signal: str, value: float, origin: str) -> str:
    """"soru terimlerinin kapsanma oranı ≥ 0,450 (…)"."""
    return f"{signal_label(signal)} ≥ {format_number(value)} ({origin})"
