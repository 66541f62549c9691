"""The document jobs: `ingest_document` (one uploaded PDF, Word, Excel or PowerPoint file), `reembed` (every chunk)
and `warm_quotes` (the quoter's sentences of documents stored without them, queued by a starting
worker: `queue_unwarmed_quotes`); and `expire_conversations`, the saved conversations' retention
(queued by every worker at its start and once a day: `queue_conversation_retention`), and `expire_audit`, the questions
log's (the audit trail's) retention, queued the same way (`queue_audit_retention`).

An upload's stages: extract (the text layer) → ocr (pages without one, when there are any) →
chunk → embed → store; cancelling takes effect at the next page or batch of any of them. Then,
after the commit, quotes: the quoter's sentences into the passage cache (`warm_quotes`), which a
cancel only stops (the document stays).

Both call the documents package's one write path (`ingest_pdf`, `reembed_all`) with the job's
progress callback, so a background upload and `python -m ragcore ingest` store exactly the
same thing, and cancelling (the callback raises) rolls the single ingest transaction back.

Upload bytes are staged as a file before the job is queued: `DATA_DIR/uploads/incoming/<job
id>.pdf` (`.docx`, `.xlsx`, `.pptx` for an Office file: the format is told by the bytes when the job is queued, and
recorded in its arguments), mode 0600, written and fsynced before the row commits. A file rather than a bytea
column because the finished document lives under `DATA_DIR/uploads` anyway (named by its
sha256, served for download by the app), so every machine that runs workers must already
share that folder with the app; staging beside it adds no new requirement, keeps 50 MB
uploads out of the database's WAL and backups, and needs no cleanup of table bloat. The
staged file is removed when the job succeeds or is cancelled, and when it fails for good: a
failure the same bytes must repeat (the file is already stored, the PDF cannot be read) or
the job's last attempt (`INGEST_MAX_ATTEMPTS`). Otherwise (the embedder was down, the worker
died) it is kept, so that a retry reads the same bytes.
"""

from __future__ import annotations

import errno
import logging
import os
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ragcore.core import Settings, format_duration, format_integer, short_id
from ragcore.documents import (
    DISK_FULL,
    EXTENSIONS,
    KINDS_TEXT,
    PDF,
    DuplicateDocument,
    IngestError,
    PdfError,
    UnusableFile,
    VersionBaseGone,
    check_free_space,
    check_name,
    check_size,
    count_unit,
    detect_format,
    hidden_note,
    ingest_file,
    page_size_notes,
    reembed_all,
    validate_roles,
)
from ragcore.jobs import claims, service
from ragcore.jobs.kinds import (
    JobCancelled,
    JobError,
    JobFailed,
    JobKind,
    JobRun,
    Progress,
    Stage,
    register_kind,
)
from ragcore.jobs.store import Job
from ragcore.store import Database, DatabaseUnavailable

log = logging.getLogger(__name__)

INGEST = "ingest_document"
REEMBED = "reembed"
QUOTES = "warm_quotes"
RETENTION = "expire_conversations"
AUDIT_RETENTION = "expire_audit"

# An upload is tried at most this often (first run and retries): a retryable failure keeps the
# staged file until then, never for good.
INGEST_MAX_ATTEMPTS = 3

INGEST_STAGES = {
    # Only a PDF with pages without a text layer passes "ocr"; it takes seconds per page (bench/ocr.py),
    # so on a scan most of the time is spent there: the stage's label and time left say so.
    "extract": Stage("PDF metni çıkarılıyor", 0.0, 0.1, "sayfa"),
    "ocr": Stage("Sayfa okunuyor (OCR)", 0.1, 0.25, "sayfa"),
    "read_word": Stage("Word belgesi okunuyor", 0.0, 0.25, "paragraf"),
    "read_sheets": Stage("Excel dosyası okunuyor", 0.0, 0.25),
    "read_slides": Stage("PowerPoint sunusu okunuyor", 0.0, 0.25),
    "chunk": Stage("Parçalara ayrılıyor", 0.25, 0.3, "parça"),
    # counted in parts, as the result is (`in_parts`): the vectors of a part's windows are the admin's no concern
    "embed": Stage("Parçalar aramaya hazırlanıyor", 0.3, 0.8, "parça"),
    "store": Stage("Veritabanına yazılıyor", 0.8, 0.85),
    # after the commit: the document is searchable already (ragcore.answer.quote_cache)
    "quotes": Stage("Aranabilir; alıntı cümleleri hazırlanıyor", 0.85, 1.0, "cümle", committed=True),
}
REEMBED_STAGES = {
    "embed": Stage("Vektörler yeniden hesaplanıyor", 0.0, 0.8, "vektör"),
    "store": Stage("Yeni vektörler yazılıyor", 0.8, 0.85),
    "quotes": Stage("Alıntı cümleleri hazırlanıyor", 0.85, 1.0, "cümle", committed=True),
}
QUOTES_STAGES = {"quotes": Stage("Alıntı cümleleri hazırlanıyor", 0.0, 1.0, "cümle")}


# --------------------------------------------------------------------------- staging


def staged_path(settings: Settings, job_id: int, file_format: str = PDF) -> Path:
    return settings.incoming_dir / f"{int(job_id)}{EXTENSIONS[file_format]}"


def _staged(settings: Settings, job: Job) -> Path:
    """The job's staged file (a job queued before Word files has no format argument: a PDF)."""
    return staged_path(settings, job.id, job.arguments.get("file_format", PDF))


def _stage(settings: Settings, job: Job, data: bytes) -> list[Path]:
    folder = settings.incoming_dir
    folder.mkdir(parents=True, exist_ok=True)
    folder.chmod(0o700)
    final = _staged(settings, job)
    tmp = folder / f".{job.id}.{os.getpid()}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, final)
    except BaseException as exc:
        tmp.unlink(missing_ok=True)
        if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT):
            log.error("upload not staged, the disk is full: %s", exc)
            raise JobError(DISK_FULL) from exc
        raise
    return [final]


def _discard_staged(settings: Settings, job: Job) -> None:
    _staged(settings, job).unlink(missing_ok=True)


def _staged_missing(settings: Settings, job: Job) -> str | None:
    if _staged(settings, job).is_file():
        return None
    return (f"İş {short_id(job.public_id)} yeniden denenemiyor: yüklenen dosya artık yok (tamamlanan, iptal edilen ve yeniden "
            "denense de aynı sonuçla bitecek işlerin — aynı dosya zaten yüklü, PDF okunamıyor — dosyası silinir). "
            "Gerekirse dosyayı yeniden yükleyin.")


def remove_orphan_staged_files(db: Database, settings: Settings, min_age_s: float = 3600) -> list[Path]:
    """Delete staged uploads no waiting, running or failed job needs, older than `min_age_s`:
    what a process killed between staging and committing left behind (the row never existed)."""
    folder = settings.incoming_dir
    if not folder.is_dir():
        return []
    with db.connection() as conn:
        needed = {row[0] for row in conn.execute(
            "SELECT id FROM jobs WHERE kind = %s AND status IN ('queued', 'running', 'failed')", (INGEST,))}
    cutoff = time.time() - min_age_s
    removed = []
    for path in folder.iterdir():
        stem = path.name.lstrip(".").split(".")[0]
        keep = path.suffix in EXTENSIONS.values() and stem.isdigit() and int(stem) in needed
        if path.is_file() and not keep and path.stat().st_mtime < cutoff:
            path.unlink(missing_ok=True)
            removed.append(path)
    return removed


# --------------------------------------------------------------------------- ingest_document


def submit_ingest(
    db: Database,
    settings: Settings,
    data: bytes,
    *,
    filename: str,
    roles: Iterable[str],
    title: str | None = None,
    created_by: str | None = None,
    resolves_question_id: int | None = None,
    new_version_of: int | None = None,
) -> Job:
    """Stage the bytes and queue their ingestion; returns at once with the queued job.

    `new_version_of` (a document's key): the file is that document's next version, switched in
    when the job has stored it (`ingest_file`); `roles` may then be empty (the current version's).

    The cheap checks (empty, too big, roles, the format told by the first bytes and a name that
    claims the other one, too little free disk: MIN_FREE_DISK_MB) refuse here with the documents
    package's Turkish message; everything
    that needs the file parsed (encrypted, corrupt, no text, duplicate) fails the job with that
    message instead.
    """
    if not data:
        raise JobError(f"Dosya boş; lütfen bir {KINDS_TEXT} dosyası seçin.")
    try:
        allowed = validate_roles(db, roles) if roles or new_version_of is None else []
        check_size(data, settings)
        file_format = detect_format(data, filename)
        check_name(filename, file_format)
        check_free_space(settings)  # before the bytes are staged
    except (IngestError, PdfError, UnusableFile) as exc:
        raise JobError(str(exc)) from exc
    name = Path(filename).name or f"belge{EXTENSIONS[file_format]}"
    arguments = {"filename": name, "roles": allowed, "title": (title or "").strip() or None,
                 "size_bytes": len(data), "file_format": file_format}
    if new_version_of is not None:
        arguments["new_version_of"] = int(new_version_of)
    return service.submit(db, INGEST, arguments, label=name, created_by=created_by,
                          resolves_question_id=resolves_question_id,
                          stage_inputs=lambda job: _stage(settings, job, data))


def in_parts(progress: Progress) -> Progress:
    """An upload's progress with the `embed` stage counted in parts: it embeds the parts and their
    windows together (472 vectors for 102 parts), and the job's card, the command line's bars and
    the result speak of parts (the `chunk` stage, reported first, says how many)."""
    parts = 0

    def report(stage: str, done: int, total: int) -> None:
        nonlocal parts
        if stage == "chunk":
            parts = total
        elif stage == "embed" and parts and total:
            done, total = done * parts // total, parts
        progress(stage, done, total)

    return report


def _run_ingest(run: JobRun) -> dict[str, Any]:
    started = time.monotonic()  # the result's duration covers every stage, the quotes after the commit too
    args = run.job.arguments
    path = _staged(run.settings, run.job)
    try:
        data = path.read_bytes()
    except FileNotFoundError as exc:
        raise JobFailed(
            f"Yüklenen dosya bu işçinin gördüğü yerde yok ({path}). Uygulama ve bütün işçiler aynı "
            "DATA_DIR/uploads klasörünü paylaşmalı."
        ) from exc
    from ragcore.embed import EmbeddingError

    try:
        embedder = run.embedder()
        result = ingest_file(run.db, run.settings, embedder, data, filename=args["filename"],
                            roles=args["roles"], title=args.get("title"), uploaded_by=run.job.created_by,
                            progress=in_parts(run.progress), new_version_of=args.get("new_version_of"))
    except IngestError as exc:
        raise JobFailed(str(exc), retryable=not _repeats_on_same_bytes(exc)) from exc
    except EmbeddingError as exc:
        raise JobFailed(str(exc)) from exc
    sentences = warm_quotes(run.db, embedder, [result.document_id], run.progress) if quotes_read(run.settings) else 0
    return {**result.as_dict(), "quote_sentences": sentences, "seconds": round(time.monotonic() - started, 3)}


def quotes_read(settings: Settings) -> bool:
    """Whether answers read the quotable sentences' vectors, so that filling them after a store
    pays: the rules policy's quoter ranks a context's sentences for every quoted answer and every
    closest-passages mark (e5: a median 0.68 s each when they are not filled, `bench/quote_ranking.py`);
    the reader (ANSWER_POLICY=reader) reads its own windows and never ranks them, so there the
    fill would be embedding work no answer reads (about 0.9 of a chunk's embedding per chunk)."""
    return settings.quotes_with_rules


def warm_quotes(db: Database, embedder: Any, document_ids: list[int] | None, progress: Any = None) -> int | None:
    """Embed the stored documents' quotable sentences (`ragcore.answer.warm_quote_sentences`;
    `document_ids` None: every stored document's, after a re-embed).

    Runs after the document's transaction committed, so nothing here may undo or fail it: a cancel
    (the user's, or a worker shutting down) stops the filling and the job still succeeds; an
    embedder or database error is logged. Either way the quoter embeds what it does not find.
    A document whose sentences another job is filling right now is left to that job (`claims`).
    None when it did not finish."""
    from ragcore.answer import warm_quote_sentences
    from ragcore.embed import EmbeddingError

    try:
        with claims.claim(db, claims.QUOTE_SENTENCES, _documents(db, document_ids)) as mine:
            return warm_quote_sentences(db, embedder, mine, progress) if mine else 0
    except JobCancelled:
        log.info("quote sentences of documents %s left to the answers: cancelled after the commit", document_ids)
    except (EmbeddingError, DatabaseUnavailable) as exc:
        log.warning("quote sentences of documents %s not embedded: %s", document_ids, exc)
    return None


def _documents(db: Database, document_ids: list[int] | None) -> list[int]:
    """The given documents, or (None) every stored one: claims need their ids."""
    if document_ids is not None:
        return document_ids
    from ragcore.documents import list_documents

    return sorted(d.id for d in list_documents(db, "admin"))


def _repeats_on_same_bytes(exc: IngestError) -> bool:
    """A duplicate, a file that cannot be read, or a new version of a deleted document: a retry of
    the same staged bytes fails alike. (A removed duplicate is uploaded again; a changed embedding
    model or a database error may pass on a retry.)"""
    return (isinstance(exc, (DuplicateDocument, VersionBaseGone))
            or isinstance(exc.__cause__, (PdfError, UnusableFile)))


def _resolve_question(db: Database, job: Job, result: dict[str, Any]) -> None:
    if job.resolves_question_id is None:
        return
    from ragcore.answer import resolve_alike

    # the question and every open asking of the same one; none open: resolved by hand meanwhile
    if not resolve_alike(db, job.resolves_question_id, job.created_by or "admin"):
        log.info("question %d was already resolved when job %d finished", job.resolves_question_id, job.id)


def _ingest_summary(result: dict[str, Any]) -> str:
    """"“Başlık” aranabilir: 24 sayfa, 102 parça; 4 dk 28 sn sürdü" — the title, not the document's id."""
    skipped = result.get("skipped_pages") or []
    pages = count_unit(result.get("file_format") or PDF)  # a Word file's sections, a workbook's sheets, slides
    version = f" (sürüm {result['version']}, önceki sürüm arşivde)" if (result.get("version") or 1) > 1 else ""
    text = (f"“{result.get('title')}”{version} aranabilir: {format_integer(result.get('pages'))} {pages}, "
            f"{format_integer(result.get('chunks'))} parça; {format_duration(result.get('seconds', 0))} sürdü")
    scanned = result.get("ocr_pages") or []
    text += f"; OCR ile okunan sayfalar: {', '.join(map(str, scanned))}" if scanned else ""
    text += f"; metni okunamayan sayfalar: {', '.join(map(str, skipped))}" if skipped else ""
    text += f"; {hidden_note(result.get('file_format') or PDF, hidden)}" if (hidden := result.get("hidden_parts")) else ""
    notes = page_size_notes(result.get("oversized_pages") or [], result.get("undrawable_pages") or [],
                            result.get("too_large_for_ocr") or [])
    return " ".join([text + ("." if notes else ""), *notes])


INGEST_KIND = register_kind(JobKind(
    name=INGEST,
    label="Doküman yükleme",
    run=_run_ingest,
    stages=INGEST_STAGES,
    summary=_ingest_summary,
    discard=_discard_staged,
    on_success=_resolve_question,
    cannot_retry=_staged_missing,
    max_attempts=INGEST_MAX_ATTEMPTS,
))


# --------------------------------------------------------------------------- reembed


def submit_reembed(db: Database, *, created_by: str | None = None) -> Job:
    return service.submit(db, REEMBED, {}, label="Bütün parçalar", created_by=created_by)


def _run_reembed(run: JobRun) -> dict[str, Any]:
    from ragcore.embed import EmbeddingError

    try:
        embedder = run.embedder()
        count = reembed_all(run.db, embedder, progress=run.progress, windows=run.settings.dense_windows)
    except EmbeddingError as exc:
        raise JobFailed(str(exc)) from exc
    return {"chunks": count, "model": embedder.name, "dim": embedder.dim,
            "quote_sentences": warm_quotes(run.db, embedder, None, run.progress) if quotes_read(run.settings) else 0}


REEMBED_KIND = register_kind(JobKind(
    name=REEMBED,
    label="Yeniden gömme",
    run=_run_reembed,
    stages=REEMBED_STAGES,
    # The model's id is for the status panel's technical details, not for this line.
    summary=lambda result: f"{format_integer(result.get('chunks'))} parçanın vektörü yeni modelle yeniden hesaplandı",
    queueing_lock=REEMBED,
    already_queued="Sırada bekleyen bir yeniden gömme işi zaten var.",
))


# --------------------------------------------------------------------------- quotes


def queue_unwarmed_quotes(db: Database, settings: Settings | None = None) -> Job | None:
    """At a worker's start: one job for the documents whose quotable sentences have no vector yet
    (`ragcore.answer.unwarmed_documents`), or None when there are none or one is queued already,
    or when no answer reads them (`quotes_read`; a switch back to the rules queues them at the next start).

    Documents stored before uploads filled them, or whose filling was cancelled, would otherwise
    cost every answer over them its sentences' embedding until the next re-embed."""
    from ragcore.answer import unwarmed_documents

    if settings is not None and not quotes_read(settings):
        return None
    unwarmed = unwarmed_documents(db)
    busy = claims.held(db, claims.QUOTE_SENTENCES, unwarmed)  # an upload's own stage is filling them now
    document_ids = [d for d in unwarmed if d not in busy]
    if not document_ids:
        return None
    return service.submit_unless_queued(db, QUOTES, {"document_ids": document_ids},
                                        label=f"{format_integer(len(document_ids))} dokümanın cümleleri")


def _run_quotes(run: JobRun) -> dict[str, Any]:
    from ragcore.answer import warm_quote_sentences
    from ragcore.embed import EmbeddingError

    document_ids = [int(i) for i in run.job.arguments["document_ids"]]
    try:
        with claims.claim(run.db, claims.QUOTE_SENTENCES, document_ids) as mine:
            count = warm_quote_sentences(run.db, run.embedder(), mine, run.progress) if mine else 0
    except EmbeddingError as exc:
        raise JobFailed(str(exc)) from exc
    result = {"documents": len(mine), "quote_sentences": count}
    if len(mine) < len(document_ids):
        log.info("quote sentences of documents %s left to the jobs filling them now",
                 sorted(set(document_ids) - set(mine)))
        result["left_to_other_jobs"] = len(document_ids) - len(mine)
    return result


def _quotes_summary(result: dict[str, Any]) -> str:
    text = (f"{format_integer(result.get('documents'))} dokümanın "
            f"{format_integer(result.get('quote_sentences'))} cümlesi alıntıya hazırlandı")
    others = result.get("left_to_other_jobs")
    return text + (f"; {format_integer(others)} dokümanınkini o sırada başka bir iş hazırlıyordu" if others else "")


QUOTES_KIND = register_kind(JobKind(
    name=QUOTES,
    label="Alıntı cümleleri",
    run=_run_quotes,
    stages=QUOTES_STAGES,
    summary=_quotes_summary,
    queueing_lock=QUOTES,
    already_queued="Sırada bekleyen bir alıntı cümleleri işi zaten var.",
))


# --------------------------------------------------------------------------- conversation retention


def queue_conversation_retention(db: Database, settings: Settings) -> Job | None:
    """Queue the deletion of conversations untouched for CONVERSATION_RETENTION_DAYS (a worker
    does at its start and once a day); None when none is that old, or one job is queued already.
    Until it runs, the conversations' own reads no longer show them."""
    from ragcore.conversations import expired_conversations

    if not expired_conversations(db, settings):
        return None
    return service.submit_unless_queued(db, RETENTION, {}, label="Eski sohbetler")


def _run_retention(run: JobRun) -> dict[str, Any]:
    from ragcore.conversations import expire_conversations

    return {"deleted": expire_conversations(run.db, run.settings), "days": run.settings.conversation_retention_days}


RETENTION_KIND = register_kind(JobKind(
    name=RETENTION,
    label="Eski sohbetlerin silinmesi",
    run=_run_retention,
    summary=lambda result: (f"{format_integer(result.get('deleted'))} sohbet silindi "
                            f"({format_integer(result.get('days'))} günden uzun süredir kullanılmayanlar)"),
    queueing_lock=RETENTION,
    already_queued="Sırada bekleyen bir eski sohbet silme işi zaten var.",
))


# --------------------------------------------------------------------------- the audit trail's retention


def queue_audit_retention(db: Database, settings: Settings) -> Job | None:
    """Queue the deletion of the questions log's rows older than AUDIT_RETENTION_DAYS (a worker
    does at its start and once a day, as for conversations); None when none is that old, when
    the setting is 0 (kept forever), or when one job is queued already."""
    from ragcore.audit import expired_audit_rows

    if not expired_audit_rows(db, settings.audit_retention_days):
        return None
    return service.submit_unless_queued(db, AUDIT_RETENTION, {}, label="Eski denetim kayıtları")


def _run_audit_retention(run: JobRun) -> dict[str, Any]:
    from ragcore.audit import expire_audit_rows

    days = run.settings.audit_retention_days
    return {"deleted": expire_audit_rows(run.db, days), "days": days}


AUDIT_RETENTION_KIND = register_kind(JobKind(
    name=AUDIT_RETENTION,
    label="Eski denetim kayıtlarının silinmesi",
    run=_run_audit_retention,
    summary=lambda result: (f"{format_integer(result.get('deleted'))} soru kaydı silindi "
                            f"({format_integer(result.get('days'))} günden eski olanlar)"),
    queueing_lock=AUDIT_RETENTION,
    already_queued="Sırada bekleyen bir eski denetim kaydı silme işi zaten var.",
))
