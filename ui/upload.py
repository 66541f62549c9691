"""Uploading a PDF from the browser: the handler (testable without a browser) and its widgets.

`upload_document` is the one code path for the Dokümanlar page and the review queue's
"resolve by uploading": it turns ingest progress callbacks into a status box with a progress
bar, and every refusal into the ingest module's Turkish `IngestError` message.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import streamlit as st

from ragcore.config import ROLE_LABELS, ROLES
from ragcore.models import User
from ui.context import AppContext, get_embedder
from ui.markdown import escape_markdown

STAGE_LABELS = {
    "extract": "PDF metni çıkarılıyor",
    "chunk": "Bölümlere ayrılıyor",
    "embed": "Vektörler hesaplanıyor",
    "store": "Veritabanına yazılıyor",
}
# Share of the bar each stage covers (embedding dominates on a CPU).
STAGE_SPAN = {"extract": (0.0, 0.25), "chunk": (0.25, 0.3), "embed": (0.3, 0.9), "store": (0.9, 1.0)}

Progress = Callable[[str, int, int], None]


@dataclass(frozen=True)
class UploadOutcome:
    ok: bool
    message: str
    document_id: int | None = None


def overall_fraction(stage: str, done: int, total: int) -> float:
    start, end = STAGE_SPAN.get(stage, (0.0, 1.0))
    part = (done / total) if total else 1.0
    return max(0.0, min(1.0, start + (end - start) * min(1.0, part)))


def upload_document(
    ctx: AppContext,
    user: User,
    filename: str,
    data: bytes,
    roles: Sequence[str],
    title: str | None = None,
    progress: Progress | None = None,
) -> UploadOutcome:
    """Ingest one PDF for `roles`; never raises for user errors, returns a Turkish message instead."""
    from ragcore.ingest import IngestError, ingest_pdf

    if user.role != "admin":
        return UploadOutcome(False, "Doküman yükleme yalnızca yöneticiye açıktır.")
    if not data:
        return UploadOutcome(False, "Dosya boş; lütfen bir PDF seçin.")
    if not filename.lower().endswith(".pdf"):
        return UploadOutcome(False, "Yalnızca PDF dosyaları yüklenebilir.")
    try:
        embedder = get_embedder()
    except Exception as exc:
        return UploadOutcome(False, f"Gömme modeli kullanılamıyor, doküman işlenemedi: {exc}")
    try:
        result = ingest_pdf(ctx.db, ctx.settings, embedder, data, filename=filename, roles=list(roles),
                            title=title or None, uploaded_by=user.username, progress=progress)
    except IngestError as exc:
        return UploadOutcome(False, str(exc))
    except Exception as exc:  # unexpected: still a Turkish sentence, with the cause
        return UploadOutcome(False, f"Doküman yüklenemedi: {exc}")
    skipped = f" Metin bulunamayan sayfalar: {', '.join(map(str, result.skipped_pages))}." if result.skipped_pages else ""
    return UploadOutcome(
        True,
        f"“{result.title}” yüklendi: {result.pages} sayfa, {result.chunks} bölüm, {result.seconds:.1f} sn.{skipped}",
        result.document_id,
    )


def role_picker(key: str, default: Sequence[str] = ("personel",)) -> list[str]:
    return st.multiselect(
        "Kimler okuyabilir?",
        ROLES,
        default=[r for r in default if r in ROLES],
        format_func=lambda r: ROLE_LABELS.get(r, r),
        key=key,
        help="Yönetici her dokümanı görür. 'Tüm personel' herkese açık demektir.",
    )


def upload_with_status(ctx: AppContext, user: User, filename: str, data: bytes, roles: Sequence[str],
                       title: str | None = None) -> UploadOutcome:
    """Run the upload inside st.status with a progress bar that follows the ingest stages."""
    with st.status(escape_markdown(f"{filename} işleniyor…"), expanded=True) as status:
        bar = st.progress(0.0, text="Başlıyor…")
        seen: list[str] = []

        def report(stage: str, done: int, total: int) -> None:
            if stage not in seen:
                seen.append(stage)
                status.update(label=escape_markdown(f"{STAGE_LABELS.get(stage, stage)}…"))
            detail = f" ({done}/{total})" if total > 1 else ""
            bar.progress(overall_fraction(stage, done, total),
                         text=escape_markdown(f"{STAGE_LABELS.get(stage, stage)}{detail}"))

        outcome = upload_document(ctx, user, filename, data, roles, title, progress=report)
        if outcome.ok:
            bar.progress(1.0, text="Tamamlandı")
            status.update(label=escape_markdown(outcome.message), state="complete", expanded=False)
        else:
            status.update(label="Yükleme başarısız", state="error", expanded=True)
            st.error(escape_markdown(outcome.message))
    return outcome
