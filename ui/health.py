"""The admin's health panel: the same report as `python -m ragcore doctor`, in the sidebar, in Turkish.

The report probes Ollama and counts rows, so it is cached for a minute rather than rebuilt
on every rerun; "Yenile" forces a fresh one. Its English sentences (`*_reason`) are for the
CLI and the log; this panel renders the same facts from the report's structured fields
(cause codes, origins, numbers), so nothing is translated by pattern matching.
"""

from __future__ import annotations

import streamlit as st

from ragcore.core import Settings, formatting
from ragcore.documents import ocr
from ragcore.ops import HealthReport, run_checks
from ui import labels
from ui.context import AppContext
from ui.markdown import escape_markdown


@st.cache_data(ttl=60, show_spinner="Sistem denetleniyor…")
def _report(_ctx: AppContext, data_dir: str) -> HealthReport:
    return run_checks(_ctx.settings, _ctx.db)


def _ollama_cause(cause: str, model: str, settings: Settings) -> str | None:
    return {
        "setting": None,
        "ollama_has_model": f"Ollama erişilebilir ve {model} modeli yüklü",
        "ollama_missing_model": f"Ollama erişilebilir ama {model} modeli indirilmemiş (ollama pull {model})",
        "ollama_unreachable": f"Ollama'ya ulaşılamıyor ({settings.ollama_base_url})",
        "openai_reachable": "OpenAI uyumlu sunucu erişilebilir",
        "openai_unreachable": "OpenAI uyumlu sunucuya ulaşılamıyor",
        "cpu_lacks_e5": "bu işlemci gömülü e5 motorunun gerektirdiği komut setlerini desteklemiyor",
    }.get(cause, cause)


def embedding_reason(report: HealthReport, settings: Settings) -> str:
    """Why this embedder, in Turkish ("otomatik seçim: Ollama'ya ulaşılamıyor (…); gömülü e5 kullanılıyor")."""
    if "setting" in report.embedding_causes:
        return f"EMBED_BACKEND={settings.embed_backend} ayarıyla seçildi"
    parts = [_ollama_cause(c, settings.embed_model, settings) for c in report.embedding_causes]
    if report.embedding_backend != "ollama":
        parts.append(f"{labels.EMBEDDER_LABELS.get(report.embedding_backend or '', report.embedding_backend)} "
                     "kullanılıyor")
    return "otomatik seçim: " + "; ".join(p for p in parts if p)


def generator_reason(report: HealthReport, settings: Settings) -> str:
    if "setting" in report.generator_causes:
        return f"LLM_BACKEND={settings.llm_backend} ayarıyla seçildi"
    parts = [_ollama_cause(c, settings.llm_model, settings) for c in report.generator_causes]
    if report.generator_backend == "extractive":
        parts.append("dil modeli olmadan kaynaklardaki cümleler alıntılanıyor")
    return "otomatik seçim: " + "; ".join(p for p in parts if p)


def retrieval_reason(report: HealthReport, settings: Settings) -> str | None:
    origin = report.retrieval_origin
    if origin is None:
        return None
    if origin == "invalid":
        return report.retrieval_reason  # RetrievalError: already a Turkish message
    text = {
        "setting": f"RETRIEVAL_MODE={settings.retrieval_mode} ayarıyla seçildi",
        "measured": "otomatik: bu gömme modeli için ölçülerek seçildi (ragcore/measured/retrieval.json)",
        "untuned": "otomatik: bu gömme modeli için ölçüm yok, varsayılan sıra birleştirme (RRF)",
    }[origin]
    if report.retrieval_weight is not None:
        text += f"; vektör ağırlığı {formatting.number(report.retrieval_weight, 2)}"
    return text


def threshold_reason(report: HealthReport) -> str | None:
    if report.threshold_signal is None or report.threshold_value is None:
        return None
    origin = {
        "setting": "REFUSAL_THRESHOLD ayarından",
        "calibrated": "bu gömme modeli için ölçülerek belirlendi",
        "default": "bu model için ölçülmedi: modelden bağımsız varsayılan",
    }.get(report.threshold_origin or "", "")
    return labels.threshold_text(report.threshold_signal, report.threshold_value, origin)


def _generator_text(report: HealthReport) -> str:
    name = labels.GENERATOR_LABELS.get(report.generator_backend or "", report.generator_backend or "—")
    return name if report.generator_backend == "extractive" else f"{name} · {report.generator_model}"


def panel_lines(report: HealthReport) -> list[tuple[str, str]]:
    """The panel's table: (Turkish name, value); values are ours or versions and model names."""
    index = (f"{report.index_model} ({report.index_dim} boyutlu vektör)" if report.index_model
             else "henüz oluşturulmadı (ilk yükleme oluşturur)")
    content = (f"{formatting.integer(report.documents)} doküman, {formatting.integer(report.chunks)} parça"
               if report.documents is not None else "—")
    embedder = labels.EMBEDDER_LABELS.get(report.embedding_backend or "", report.embedding_backend or "—")
    return [
        ("PostgreSQL", report.postgres_version or "—"),
        ("pgvector", report.pgvector_version or "—"),
        ("Migrasyonlar", ", ".join(f"{v:03d}" for v in report.migrations_applied) or "—"),
        ("Dizin", index),
        ("İçerik", content),
        ("Gömme", f"{embedder} · {report.embedding_model} (dizin adı {report.embedding_name})"),
        ("Arama modu", labels.mode_label(report.retrieval_mode) if report.retrieval_mode else "—"),
        ("Üretici", _generator_text(report)),
        ("Ollama", ("erişilebilir" if report.ollama_reachable else "erişilemiyor") + f" ({report.ollama_url})"),
        ("OCR", f"Tesseract {report.ocr_version}, Türkçe: taranmış sayfalar okunur" if report.ocr_available
         else f"kurulu değil: taranmış PDF'ler reddedilir (paketler: {', '.join(ocr.PACKAGES)})"),
    ]


def render_health_panel(ctx: AppContext) -> None:
    report = _report(ctx, str(ctx.settings.data_dir))
    healthy = report.database_ok and not report.migrations_pending
    with st.expander("Sistem durumu", icon=":material/check_circle:" if healthy else ":material/error:"):
        if report.database_ok:
            where = "harici sunucu (DATABASE_URL)" if ctx.settings.database_url else "gömülü sunucu"
            st.markdown(f"Veritabanı: **çalışıyor** ({escape_markdown(where)})")
        else:
            st.error(escape_markdown(f"Veritabanı sorunu: {report.database_error}"))
        for name, value in panel_lines(report):
            st.markdown(f"**{escape_markdown(name)}:** {escape_markdown(value)}")
        for title, reason in (("Gömme seçimi", embedding_reason(report, ctx.settings)),
                              ("Arama modu", retrieval_reason(report, ctx.settings)),
                              ("Ret eşiği", threshold_reason(report)),
                              ("Üretici seçimi", generator_reason(report, ctx.settings))):
            if reason:
                st.caption(escape_markdown(f"{title}: {reason}"))
        if st.button("Yenile", key="health_refresh", icon=":material/refresh:"):
            _report.clear()
            st.rerun()
