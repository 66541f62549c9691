"""Turkish names for the technical values the UI shows: retrieval modes, evidence signals,
model backends, and where a measured default came from.

The values themselves stay English identifiers (settings, logs, the CLI, JSON files); the UI
shows them through these tables, so no "weighted" or "auto: Ollama not reachable …" reaches
a Turkish reader.
"""

from __future__ import annotations

from ragcore import formatting

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


# --------------------------------------------------------------------------- evaluation lab tables
# Turkish column names for the lab's tables (the keys are those of `eval.report.list_runs`, the
# run summaries and `eval.metrics.METRICS`). Shared here so the lab page (ui/lab_*.py) and any
# other table show one vocabulary; metric abbreviations stay as the literature writes them.
LAB_COLUMNS = {
    "folder": "Çalıştırma",
    "kind": "Tür",
    "created": "Oluşturulma",
    "retrievers": "Arama yöntemleri",
    "retriever": "Arama yöntemi",
    "chunk_sizes": "Parça boyutları",
    "chunk_size": "Parça boyutu",
    "commit": "Kod sürümü",
    "questions": "Soru sayısı",
    "seconds": "Süre (sn)",
    "tuned_weight": "Ağırlık (eğitim kümesi)",
    "recall@1": "Recall@1",
    "recall@5": "Recall@5",
    "recall@10": "Recall@10",
    "mrr@10": "MRR@10",
    "ndcg@10": "nDCG@10",
    "system": "Sistem",
    "baseline": "Taban",
    "metric": "Ölçü",
    "diff": "Fark",
    "ci": "Güven aralığı",
    "p_holm": "p (Holm)",
}
LAB_KINDS = {"retrieval": "Arama", "answers": "Cevap"}
METRIC_HELP = {
    "recall@1": "Doğru bölümün ilk sırada bulunduğu soruların oranı",
    "recall@5": "Doğru bölümün ilk 5 sonuç içinde bulunduğu soruların oranı",
    "recall@10": "Doğru bölümün ilk 10 sonuç içinde bulunduğu soruların oranı",
    "mrr@10": "Doğru bölümün sırasının tersinin ortalaması (ilk 10 içinde)",
    "ndcg@10": "Sıraya göre indirimli kazanç, ilk 10 sonuç",
}


def lab_column(key: str) -> str:
    """A lab table's column in Turkish ("chunk_sizes" → "Parça boyutları"); unknown keys unchanged."""
    return LAB_COLUMNS.get(key, key)


def lab_column_config(keys: list[str]) -> dict[str, object]:
    """`st.dataframe(column_config=…)` for a frame with these raw keys as columns: Turkish
    labels, the metrics' meaning on hover, metric columns narrow so ndcg@10 is not cut off."""
    import streamlit as st

    config: dict[str, object] = {}
    for key in keys:
        if key in METRIC_HELP:
            config[key] = st.column_config.NumberColumn(lab_column(key), help=METRIC_HELP[key], format="localized",
                                                        width="small")
        else:
            config[key] = st.column_config.Column(lab_column(key))
    return config
