"""The admin's health panel: the same report as `python -m ragcore doctor`, in the sidebar.

The report probes Ollama and counts rows, so it is cached for a minute rather than rebuilt
on every rerun; "Yenile" forces a fresh one.
"""

from __future__ import annotations

import streamlit as st

from ragcore.doctor import HealthReport, run_checks
from ui.context import AppContext
from ui.markdown import escape_markdown


@st.cache_data(ttl=60, show_spinner="Sistem denetleniyor…")
def _report(_ctx: AppContext, data_dir: str) -> HealthReport:
    return run_checks(_ctx.settings, _ctx.db)


def render_health_panel(ctx: AppContext) -> None:
    report = _report(ctx, str(ctx.settings.data_dir))
    healthy = report.database_ok and not report.migrations_pending
    with st.expander("Sistem durumu", icon=":material/check_circle:" if healthy else ":material/error:"):
        if report.database_ok:
            st.markdown(f"Veritabanı: **çalışıyor** ({escape_markdown(report.database)})")
        else:
            st.error(escape_markdown(f"Veritabanı sorunu: {report.database_error}"))
        lines = [
            ("PostgreSQL", report.postgres_version),
            ("pgvector", report.pgvector_version),
            ("Migrasyonlar", ", ".join(f"{v:03d}" for v in report.migrations_applied) or "—"),
            ("Dizin", report.embedding_index or "henüz oluşturulmadı (ilk yükleme oluşturur)"),
            ("İçerik", f"{report.documents} doküman, {report.chunks} parça" if report.documents is not None else "—"),
            ("Gömme", f"{report.embedding_backend} / {report.embedding_model} ({report.embedding_name})"),
            ("Arama modu", report.retrieval_mode or "—"),
            ("Üretici", f"{report.generator_backend} / {report.generator_model}"),
            ("Ollama", ("erişilebilir" if report.ollama_reachable else "erişilemiyor") + f" ({report.ollama_url})"),
        ]
        st.text("\n".join(f"{name:<13}{value}" for name, value in lines))
        if report.embedding_reason:
            st.caption(escape_markdown(f"Gömme seçimi: {report.embedding_reason}"))
        if report.retrieval_reason:
            st.caption(escape_markdown(f"Arama modu: {report.retrieval_reason}"))
        if report.refusal_threshold:
            st.caption(escape_markdown(f"Ret eşiği: {report.refusal_threshold}"))
        if report.generator_reason:
            st.caption(escape_markdown(f"Üretici seçimi: {report.generator_reason}"))
        if st.button("Yenile", key="health_refresh", icon=":material/refresh:"):
            _report.clear()
            st.rerun()
