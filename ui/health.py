"""The admin's health panel: the same report as `python -m ragcore doctor`, in the sidebar, in Turkish.

The report probes Ollama and counts rows, so it is cached for a minute rather than rebuilt
on every rerun; "Yenile" forces a fresh one. Its English sentences (`*_reason`) are for the
CLI and the log; this panel renders the same facts from the report's structured fields
(cause codes, origins, numbers), so nothing is translated by pattern matching. The plain lines
name no model id, version, address or setting: those sit under "Teknik ayrıntılar".
"""

from __future__ import annotations

import streamlit as st

from ragcore.core import Settings, format_integer, format_number
from ragcore.documents import OCR_PACKAGES
from ragcore.ops import HealthReport, run_checks
from ui import labels
from ui.context import AppContext
from ui.markdown import escape_markdown
from ui.technical import technical_details


@st.cache_data(ttl=60, show_spinner="Sistem denetleniyor…")
def _report(_ctx: AppContext, data_dir: str) -> HealthReport:
    return run_checks(_ctx.settings, _ctx.db)


def _ollama_cause(cause: str) -> str | None:
    return {
        "setting": None,
        "ollama_has_model": "Ollama erişilebilir ve gereken model yüklü",
        "ollama_missing_model": "Ollama erişilebilir ama gereken model indirilmemiş",
        "ollama_unreachable": "Ollama'ya ulaşılamıyor",
        "openai_reachable": "OpenAI uyumlu sunucu erişilebilir",
        "openai_unreachable": "OpenAI uyumlu sunucuya ulaşılamıyor",
        "cpu_lacks_e5": "bu işlemci gömülü e5 motorunun gerektirdiği komut setlerini desteklemiyor",
    }.get(cause, cause)


def embedding_reason(report: HealthReport, settings: Settings) -> str:
    """Why this search model, in Turkish ("otomatik seçim: Ollama'ya ulaşılamıyor; gömülü e5 kullanılıyor")."""
    if "setting" in report.embedding_causes:
        return "yönetici ayarıyla seçildi"
    parts = [_ollama_cause(c) for c in report.embedding_causes]
    if report.embedding_backend != "ollama":
        parts.append(f"{labels.EMBEDDER_LABELS.get(report.embedding_backend or '', report.embedding_backend)} "
                     "kullanılıyor")
    return "otomatik seçim: " + "; ".join(p for p in parts if p)


def generator_reason(report: HealthReport, settings: Settings) -> str:
    if "setting" in report.generator_causes:
        return "yönetici ayarıyla seçildi"
    parts = [_ollama_cause(c) for c in report.generator_causes]
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
        "setting": "yönetici ayarıyla seçildi",
        "measured": "otomatik: bu arama modeli için ölçülerek seçildi",
        "untuned": "otomatik: bu arama modeli için ölçüm yok, varsayılan sıra birleştirme",
    }[origin]
    if report.retrieval_weight is not None:
        text += f"; vektör ağırlığı {format_number(report.retrieval_weight, 2)}"
    return text


def threshold_reason(report: HealthReport) -> str | None:
    if report.threshold_signal is None or report.threshold_value is None:
        return None
    origin = {
        "setting": "yönetici ayarından",
        "calibrated": "bu arama modeli için ölçülerek belirlendi",
        "default": "bu model için ölçülmedi: modelden bağımsız varsayılan",
    }.get(report.threshold_origin or "", "")
    return labels.threshold_text(report.threshold_signal, report.threshold_value, origin)


DISK_PLACES = {"data": "veri klasöründe", "database": "veritabanı klasöründe"}
# Why the embedded database would not start (EmbeddedStartError.kind), for the admin in plain Turkish;
# the server's own sentence and the commands sit under "Teknik ayrıntılar".
START_PROBLEMS = {
    "disk_full": "Veritabanı başlatılamadı: disk dolu. Sunucuda yer açın; veritabanı bir sonraki başlatmada "
                 "kendini toparlar.",
    "shared_memory": "Veritabanı başlatılamadı: sunucunun paylaşılan belleği yetmiyor (disk değil, bellek). "
                     "Sunucunun belleği artırılmalı ya da başka programlar kapatılmalı.",
    "lock_file": "Veritabanı başlatılamadı: başka bir veritabanı sunucusu aynı klasörü kullanıyor görünüyor. O "
                 "sunucu durdurulmalı; çalışmıyorsa kalan kilit dosyası silinmeli.",
    "port_in_use": "Veritabanı başlatılamadı: dinleyeceği adresi başka bir program kullanıyor. O program "
                   "durdurulmalı ya da veritabanına başka bir adres verilmeli.",
    "permissions": "Veritabanı başlatılamadı: kendi dosyalarını okuma ya da yazma izni yok. Veri klasörünün "
                   "sahibi ve izinleri düzeltilmeli.",
}


def gigabytes(size_bytes: int) -> str:
    """Free space the way the panel says it: "74,1 GB", or "812 MB" below a gigabyte."""
    if size_bytes < 1024 ** 3:
        return f"{format_integer(size_bytes // 1024 ** 2)} MB"
    return f"{format_number(size_bytes / 1024 ** 3, 1)} GB"


def disk_line(report: HealthReport) -> str:
    """"veri klasöründe 74,1 GB, veritabanı klasöründe 74,1 GB boş" (an external database's disk is not measured)."""
    if not report.disk:
        return "ölçülemedi (Teknik ayrıntılar)"
    line = ", ".join(f"{DISK_PLACES.get(d.place, d.place)} {gigabytes(d.free_bytes)}" for d in report.disk) + " boş"
    if report.database.startswith("external"):
        line += "; veritabanı ayrı sunucuda, onun diski buradan ölçülemez"
    return line


def disk_warning(report: HealthReport) -> str | None:
    """The first place below the floor, in plain Turkish: uploads wait, and why it matters."""
    low = [d for d in report.disk if d.place in report.disk_low]
    if not low:
        return None
    return (f"Diskte yer az: {DISK_PLACES.get(low[0].place, low[0].place)} {gigabytes(low[0].free_bytes)} boş; yeni "
            f"belge yüklemek için en az {format_integer(report.min_free_disk_mb)} MB gerekir, yüklemeler geri "
            "çevriliyor. Sunucuda yer açın: disk dolarsa veritabanı durur.")


def panel_lines(report: HealthReport) -> list[tuple[str, str]]:
    """The panel's plain lines: (Turkish name, value), with no model id, version or setting name
    (those are `technical_lines`)."""
    index = "hazır" if report.index_model else "henüz oluşturulmadı (ilk yükleme oluşturur)"
    content = (f"{format_integer(report.documents)} doküman, {format_integer(report.chunks)} parça"
               if report.documents is not None else "—")
    embedder = labels.EMBEDDER_LABELS.get(report.embedding_backend or "", report.embedding_backend or "—")
    generator = labels.GENERATOR_LABELS.get(report.generator_backend or "", report.generator_backend or "—")
    return [
        ("İçerik", content),
        ("Arama dizini", index),
        ("Arama modeli", embedder),
        ("Arama modu", labels.mode_label(report.retrieval_mode) if report.retrieval_mode else "—"),
        ("Cevap üretici", generator),
        ("Ollama", "erişilebilir" if report.ollama_reachable else "erişilemiyor"),
        ("Taranmış sayfalar", "okunur (OCR)" if report.ocr_available
         else "okunamaz: sunucuya OCR programı kurulmalı (Teknik ayrıntılar)"),
        ("Disk", disk_line(report)),
    ]


def technical_lines(report: HealthReport, settings: Settings) -> list[tuple[str, str]]:
    """What a technician needs behind the plain lines: versions, model ids, addresses, and the
    settings and measurement files that made each choice (shown only under "Teknik ayrıntılar")."""
    index = f"{report.index_model} ({report.index_dim} boyutlu vektör)" if report.index_model else "—"
    lines = [("Veritabanı hatası", report.database_error)] if report.database_problem else []
    lines += [
        ("PostgreSQL", report.postgres_version or "—"),
        ("pgvector", report.pgvector_version or "—"),
        ("Migrasyonlar", ", ".join(f"{v:03d}" for v in report.migrations_applied) or "—"),
        ("Veritabanı", "harici sunucu (DATABASE_URL)" if settings.database_url else "gömülü sunucu"),
        ("Dizin", index),
        ("Arama modeli", f"{report.embedding_model or '—'} (dizin adı {report.embedding_name or '—'}; "
                         f"EMBED_BACKEND={settings.embed_backend})"),
        ("Arama modu", f"{report.retrieval_mode or '—'} (RETRIEVAL_MODE={settings.retrieval_mode}; "
                       "ölçüm: ragcore/measured/retrieval.json)"),
        ("Ret eşiği", f"{report.threshold_signal or '—'} (REFUSAL_THRESHOLD ayarı ya da "
                      "ragcore/measured/thresholds.json)"),
        ("Cevap üretici", f"{report.generator_backend or '—'} · {report.generator_model or '—'} "
                          f"(LLM_BACKEND={settings.llm_backend})"),
        ("Ollama adresi", report.ollama_url or "—"),
        ("Disk", "; ".join(f"{d.path}: {gigabytes(d.free_bytes)} boş / {gigabytes(d.total_bytes)}" for d in report.disk)
         or (report.disk_error or "—")),
        ("Yükleme için en az boş yer", f"MIN_FREE_DISK_MB={report.min_free_disk_mb}"),
        ("OCR", f"Tesseract {report.ocr_version}, Türkçe modeli" if report.ocr_available
         else f"kurulu değil (paketler: {', '.join(OCR_PACKAGES)})"),
    ]
    missing = [m for m, c in ((settings.embed_model, report.embedding_causes), (settings.llm_model, report.generator_causes))
               if "ollama_missing_model" in c]
    if missing:
        lines.append(("Eksik model", "; ".join(f"ollama pull {m}" for m in dict.fromkeys(missing))))
    return lines


def render_health_panel(ctx: AppContext) -> None:
    report = _report(ctx, str(ctx.settings.data_dir))
    healthy = report.database_ok and not report.migrations_pending and not report.disk_low
    with st.expander("Sistem durumu", icon=":material/check_circle:" if healthy else ":material/error:"):
        if report.database_ok:
            where = "ayrı bir sunucuda" if ctx.settings.database_url else "uygulamanın içinde"
            st.markdown(f"Veritabanı: **çalışıyor** ({escape_markdown(where)})")
        elif report.database_problem in START_PROBLEMS:
            st.error(escape_markdown(START_PROBLEMS[report.database_problem]))
        else:
            st.error(escape_markdown(f"Veritabanı sorunu: {report.database_error}"))
        warning = disk_warning(report)
        if warning:
            st.warning(escape_markdown(warning), icon=":material/warning:")
        for name, value in panel_lines(report):
            st.markdown(f"**{escape_markdown(name)}:** {escape_markdown(value)}")
        for title, reason in (("Arama modeli seçimi", embedding_reason(report, ctx.settings)),
                              ("Arama modu", retrieval_reason(report, ctx.settings)),
                              ("Ret eşiği", threshold_reason(report)),
                              ("Cevap üretici seçimi", generator_reason(report, ctx.settings))):
            if reason:
                st.caption(escape_markdown(f"{title}: {reason}"))
        technical_details(technical_lines(report, ctx.settings))
        if st.button("Yenile", key="health_refresh", icon=":material/refresh:"):
            _report.clear()
            st.rerun()
