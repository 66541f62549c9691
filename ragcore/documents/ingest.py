"""Upload (PDF, Word .docx, Excel .xlsx or PowerPoint .pptx) → stored document: validate,
extract, chunk, embed, then write everything at once.

The file's kind is told by its bytes (`ragcore.documents.formats`); a PDF is read page by page
(`pdf`), a .docx section by section (`word`), and both go through the same chunker; a .xlsx is
read sheet by sheet into chunks of rows under their header (`sheets`), a .pptx slide by slide,
each slide chunked on its own (`slides`). All go through the same checks and transaction. A
Word, Excel or PowerPoint chunk carries its citation label (`Chunk.locator`) instead of pages.

All checks and all slow work (extraction, embedding) happen before the database is touched;
the document, its chunks with vectors, their sentence windows with vectors (when the index is
built with them: `ragcore.documents.windows`) and their postings are inserted in one transaction, and
the file is put in place under its final name (its sha256) just before that transaction, so a
committed document always has its file. Any failure leaves no rows, an unchanged lexicon and
no stored file; a crash leaves at most an unreferenced file (see `ragcore.documents.orphans`).

A new version of a stored document (`new_version_of`, migration 024) goes the same way; inside the
same transaction, under its document's lock, the current version is retired (`start_version`)
before the new one is inserted as current, so a question sees one of them, never both or
neither, and a failure anywhere leaves the old one current.

Uploads of the same bytes take turns: an advisory lock keyed by the sha256 is held from placing
the file through the transaction to the clean-up after a failure, so an interrupted upload
cannot remove the file of a concurrent one that commits. Inside the transaction the recorded
embedding model is checked again under a lock that `ragcore.documents.reembed.reembed_all`
conflicts with, so a re-embed committed while this upload was embedding cannot leave it storing
vectors of the old model.
"""

from __future__ import annotations

import errno
import logging
import os
import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
import psycopg

from ragcore import store as dbmod
from ragcore.access import role_names, unknown_roles_message
from ragcore.core import (
    Chunk,
    DiskSpace,
    Page,
    Settings,
    create_private,
    format_integer,
    format_megabytes,
    lexical_tokens,
    private_dir,
    sanitize,
    sha256_bytes,
)
from ragcore.documents import ocr, page_images
from ragcore.documents.chunking import chunk_pages, lexical_texts
from ragcore.documents.formats import (
    DOCX,
    PDF,
    PPTX,
    XLSX,
    UnusableFile,
    check_name,
    detect_format,
    extension,
)
from ragcore.documents.pdf import PdfError, check_header, extract_pages
from ragcore.documents.pipeline import EmbeddedAhead, read_while_embedding
from ragcore.documents.rendering import RenderError
from ragcore.documents.sheets import SheetLimits, SheetText, check_workbook, chunk_sheets, extract_sheets
from ragcore.documents.slides import SlideLimits, SlideText, check_presentation, chunk_slides, extract_slides
from ragcore.documents.titles import MAX_TITLE_CHARS, default_title
from ragcore.documents.windows import Window, document_windows
from ragcore.documents.word import WordLimits, WordText, check_package, extract_sections, locate
from ragcore.embed import Embedder, EmbeddingError

log = logging.getLogger(__name__)

Progress = Callable[[str, int, int], None]
EMBED_BATCH = 32
# a PDF's "extract" (and "ocr" for pages without a text layer), or a .docx's "read_word", a .xlsx's
# "read_sheets", a .pptx's "read_slides"
STAGES = ("extract", "ocr", "read_word", "read_sheets", "read_slides", "chunk", "embed", "store")


class IngestError(ValueError):
    """An upload that was refused or failed; `str(exc)` is a Turkish message for the user."""


class DuplicateDocument(IngestError):
    """The same file (same sha256) is already stored; `public_id` names the stored one."""

    def __init__(self, public_id: str, title: str, message: str | None = None) -> None:
        super().__init__(message or f"Bu dosya zaten yüklü: “{title}” (belge {public_id}). Aynı dosya ikinci kez "
                                    "eklenmez.")
        self.public_id = public_id
        self.title = title


class VersionBaseGone(IngestError):
    """The document a new version was meant for is no longer stored (deleted while it was read)."""

    def __init__(self) -> None:
        super().__init__("Yeni sürümü yüklenecek belge bulunamadı; silinmiş olabilir. Dosyayı yeni bir belge olarak "
                         "yükleyin ya da belgeler listesinden doğru belgeyi seçin.")


@dataclass(frozen=True)
class IngestResult:
    """A stored upload. `document_id` is the key; `as_dict` (the job's result, the CLI's output)
    names the document by its public id only (ragcore.core.public_ids)."""

    document_id: int
    title: str
    pages: int
    chunks: int
    seconds: float
    skipped_pages: list[int] = field(default_factory=list)
    public_id: str = ""
    windows: int = 0  # sentence windows stored besides the chunks (their vectors are part of the embed stage)
    file_format: str = PDF  # for a .docx, `pages` counts its sections; a .xlsx's its sheets, a .pptx's its slides
    hidden_parts: list[str] = field(default_factory=list)  # hidden sheets (names) or slides (numbers), not read
    ocr_pages: list[int] = field(default_factory=list)  # pages whose text was read by OCR
    oversized_pages: list[int] = field(default_factory=list)  # page images drawn below DISPLAY_DPI
    undrawable_pages: list[int] = field(default_factory=list)  # page images refused: too large to draw
    too_large_for_ocr: list[int] = field(default_factory=list)  # pages without text not read: too large
    version_no: int = 1  # the document's version this upload became (migration 024)

    def as_dict(self) -> dict:
        return {
            "document_id": self.public_id,
            "version": self.version_no,
            "title": self.title,
            "file_format": self.file_format,
            "pages": self.pages,
            "chunks": self.chunks,
            "windows": self.windows,
            "seconds": round(self.seconds, 3),
            "skipped_pages": self.skipped_pages,
            "ocr_pages": self.ocr_pages,
            "oversized_pages": self.oversized_pages,
            "undrawable_pages": self.undrawable_pages,
            "too_large_for_ocr": self.too_large_for_ocr,
            "hidden_parts": self.hidden_parts,
        }


# --------------------------------------------------------------------------- validation


def validate_roles(db: dbmod.Database, roles: Iterable[str] | None) -> list[str]:
    """Non-empty roles that exist (the roles registry, migration 021), duplicates removed (order kept)."""
    cleaned = list(dict.fromkeys(role.strip().lower() for role in (roles or []) if role and role.strip()))
    if not cleaned:
        raise IngestError("En az bir rol seçilmeli: belgeyi kimlerin okuyabileceği boş bırakılamaz.")
    known = role_names(db)
    unknown = [role for role in cleaned if role not in known]
    if unknown:
        raise IngestError(unknown_roles_message(unknown, known))
    return cleaned


def check_size(data: bytes, settings: Settings) -> None:
    if len(data) > settings.max_upload_bytes:
        raise IngestError(
            f"Dosya çok büyük: {format_megabytes(len(data))}; en fazla {settings.max_upload_mb} MB "
            "yüklenebilir (MAX_UPLOAD_MB)."
        )


DISK_PLACES = {"data": "veri klasöründe", "database": "veritabanı klasöründe"}
DISK_FULL = "Diskte yer kalmadı: belge kaydedilemedi. Sunucuda yer açın ve belgeyi yeniden yükleyin."


class DiskSpaceLow(IngestError):
    """Less free space than MIN_FREE_DISK_MB where the upload would be written: nothing was written."""

    def __init__(self, space: DiskSpace, floor_mb: int) -> None:
        super().__init__(low_disk_message(space, floor_mb))
        self.space = space
        self.floor_mb = floor_mb


def low_disk_message(space: DiskSpace, floor_mb: int) -> str:
    """"Diskte yer az: veri klasöründe 812 MB boş, yükleme için en az 1.024 MB gerekir. …": how much is
    free, the floor, and what to do (the admin sees it in the app, the API's message_tr, the CLI)."""
    return (f"Diskte yer az: {DISK_PLACES.get(space.place, space.place)} {format_integer(space.free_mb)} MB boş, "
            f"yükleme için en az {format_integer(floor_mb)} MB gerekir. Yer açın ya da MIN_FREE_DISK_MB "
            "ayarını düşürün.")


def check_free_space(settings: Settings) -> None:
    """Refuse an upload while DATA_DIR (or the embedded database's folder) has less free space than
    MIN_FREE_DISK_MB: a full disk makes PostgreSQL panic and then refuse to start, so every entry
    point (the app, the API, the CLI, the worker) checks here before it writes anything."""
    if settings.min_free_disk_mb <= 0:
        return
    try:
        places = dbmod.storage_space(settings)
    except OSError as exc:
        log.error("cannot measure the free space of %s: %s", settings.data_dir, exc)
        raise IngestError("Veri klasörünün diskindeki boş yer ölçülemedi; belge eklenmedi. Sunucunun yöneticisi "
                          "veri klasörünün (DATA_DIR) erişilebilir olduğunu denetlemeli.") from exc
    for space in places:
        if space.below(settings.min_free_disk_bytes):
            log.warning("upload refused: %s MB free in %s, MIN_FREE_DISK_MB=%d", space.free_mb, space.path,
                        settings.min_free_disk_mb)
            raise DiskSpaceLow(space, settings.min_free_disk_mb)


def _unwritten(exc: OSError, action: str) -> IngestError:
    """A write that failed: a full disk says so in Turkish; anything else keeps the system's reason."""
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        log.error("upload not stored, the disk is full: %s", exc)
        return IngestError(DISK_FULL)
    return IngestError(f"{action}: {exc}")


class EmbeddingModelChanged(IngestError):
    """The document index moved to another embedding model while this upload was being embedded."""

    def __init__(self, recorded: str, used: str) -> None:
        super().__init__(
            f"Belge işlenirken doküman dizini başka bir gömme modeline geçirildi (“{recorded}”); bu belgenin "
            f"vektörleri “{used}” ile hesaplandığı için kaydedilmedi. Lütfen belgeyi yeniden yükleyin."
        )


class IndexModelMismatch(IngestError):
    """The index was built with another embedding model than the configured one: nothing stored.

    The message is for the admin in the app (and every other front end): what happened and what
    to do, in Turkish words. The command that re-embeds is `command`, for the log and the CLI;
    the app has no re-embed action, it is run on the server."""

    command = dbmod.REEMBED_COMMAND

    def __init__(self, recorded: str, configured: str) -> None:
        super().__init__(
            f"Doküman dizini başka bir gömme modeliyle (“{recorded}”) oluşturulmuş; ayarlı model “{configured}”. "
            "Belge eklenmedi. Sunucunun yöneticisi ya eski modeli yeniden ayarlamalı ya da bütün parçaları yeni "
            "modelle yeniden gömmeli; yeniden gömme bu uygulamadan başlatılamaz, sunucuda komut satırından "
            "çalıştırılır (komut, kurulum belgesinin “Using it” bölümünde). Ardından belgeyi yeniden yükleyin."
        )
        self.recorded = recorded
        self.configured = configured


def upload_lock(digest: str) -> str:
    """The advisory lock that uploads (and the orphan sweep) of one file's bytes share."""
    return f"dayanak-upload:{digest}"


def find_by_sha256(conn: psycopg.Connection, digest: str) -> tuple[str, str] | None:
    """(public id, title) of the stored document with these bytes, if any."""
    row = conn.execute("SELECT public_id::text, title FROM documents WHERE sha256 = %s", (digest,)).fetchone()
    return (row[0], row[1]) if row else None


def stored_path(settings: Settings, digest: str, file_format: str = PDF) -> Path:
    """Where an uploaded file lives: named by its hash, so the name never collides, with its
    format's suffix (`<sha256>.pdf`, `<sha256>.docx`)."""
    return settings.uploads_dir / f"{digest}{extension(file_format)}"


def check_upload(data: bytes, filename: str = "", settings: Settings | None = None) -> str:
    """The cheap checks for a front end that refuses a file before queueing it (the REST API):
    its kind by content, a name that claims the other kind, and what can be told without reading
    the text (a PDF cut off at the end, a ZIP that holds no Word document or unpacks past
    DOCX_MAX_UNPACKED_MB; for a .xlsx or .pptx the streamed counts too: macros, rows, cells,
    slides). Returns the format; raises `PdfError` or `UnusableFile` (Turkish messages)."""
    settings = settings or Settings()
    file_format = detect_format(data, filename)
    check_name(filename, file_format)
    if file_format == PDF:
        check_header(data)
    elif file_format == XLSX:
        check_workbook(data, SheetLimits.of(settings))
    elif file_format == PPTX:
        check_presentation(data, SlideLimits.of(settings))
    else:
        check_package(data, WordLimits.of(settings))
    return file_format


# --------------------------------------------------------------------------- work before the DB


@dataclass(frozen=True)
class UploadText:
    """An upload's text for the chunker, whatever its format: pages (a .docx's sections), the
    page count, pages skipped as empty, the title its metadata holds, and for a .docx where
    each paragraph sits (for the chunks' citation labels); for a .xlsx its sheets' rows, for a .pptx
    its slides (each chunked apart), and what their authors hid (not read)."""

    file_format: str
    pages: list[Page]
    page_count: int
    skipped_pages: list[int]
    title: str | None
    word: WordText | None = None
    ocr_pages: list[int] = field(default_factory=list)  # a PDF's pages read by OCR
    ocr_results: dict = field(default_factory=dict, compare=False, repr=False)  # their readings (word boxes)
    too_large_for_ocr: list[int] = field(default_factory=list)  # a PDF's pages without text too large to read
    sheets: SheetText | None = None
    slides: SlideText | None = None
    hidden_parts: list[str] = field(default_factory=list)

    def chunks(self, settings: Settings) -> list[Chunk]:
        """The chunks of the text, each format by its own rule, with their citation labels."""
        if self.sheets is not None:
            return chunk_sheets(self.sheets, settings.chunk_size)
        if self.slides is not None:
            return chunk_slides(self.slides, settings.chunk_size, settings.chunk_overlap)
        chunks = mark_ocr(chunk_pages(self.pages, settings.chunk_size, settings.chunk_overlap), self.ocr_pages)
        return locate(chunks, self.word) if self.word is not None else chunks


def read_upload(data: bytes, filename: str, report: Progress, settings: Settings | None = None, *,
                page_sink: Callable[[Page], None] | None = None) -> UploadText:
    """Tell the format by the bytes (and refuse a name claiming the other one), then read the
    text; an unusable file is an `IngestError` (its cause the reader's `PdfError` or `UnusableFile`).
    OCR runs within the `settings`' limits (the default settings' when None). `page_sink`: each
    page of a PDF's text layer as soon as it is read (`pdf.extract_pages`)."""
    try:
        file_format = detect_format(data, filename)
        check_name(filename, file_format)
        if file_format in (XLSX, PPTX):
            return _read_office(data, file_format, report, settings or Settings())
        if file_format == DOCX:
            word = extract_sections(data, WordLimits.of(settings or Settings()),
                                    progress=lambda done, total: report("read_word", done, total))
            return UploadText(DOCX, word.pages, word.section_count, [], word.title, word)
        extracted = extract_pages(data, progress=lambda done, total: report("extract", done, total),
                                  ocr_progress=lambda done, total: report("ocr", done, total),
                                  ocr_limits=ocr.OcrLimits.of(settings or Settings()), page_sink=page_sink)
    except (PdfError, UnusableFile) as exc:
        raise IngestError(str(exc)) from exc
    return UploadText(PDF, extracted.pages, extracted.page_count, extracted.skipped_pages, extracted.title,
                      ocr_pages=extracted.ocr_pages, ocr_results=extracted.ocr_results,
                      too_large_for_ocr=extracted.too_large_for_ocr)


def _read_office(data: bytes, file_format: str, report: Progress, settings: Settings) -> UploadText:
    """A .xlsx's visible sheets or a .pptx's visible slides (reading is quick; one step each way)."""
    stage = "read_sheets" if file_format == XLSX else "read_slides"
    report(stage, 0, 1)
    if file_format == XLSX:
        sheets = extract_sheets(data, SheetLimits.of(settings))
        text = UploadText(XLSX, sheets.pages, sheets.sheet_count, sheets.empty, sheets.title, sheets=sheets,
                          hidden_parts=sheets.hidden)
    else:
        slides = extract_slides(data, SlideLimits.of(settings))
        text = UploadText(PPTX, slides.pages, slides.slide_count, slides.empty, slides.title, slides=slides,
                          hidden_parts=[str(n) for n in slides.hidden])
    report(stage, 1, 1)
    return text


def _page_sizes(settings: Settings, extracted: UploadText, data: bytes) -> page_images.PageSizes:
    """A PDF's pages whose image will be drawn smaller or not at all (none for a .docx, which has
    no pages). A PDF that pypdf read but PDFium cannot open keeps its upload: its pages are
    not drawn either way, and the page dialog says so when asked."""
    if extracted.file_format != PDF:
        return page_images.PageSizes([], [])
    try:
        return page_images.page_sizes(settings, data)
    except RenderError as exc:
        log.warning("page sizes not recorded: PDFium cannot read the upload (%s)", exc)
        return page_images.PageSizes([], [])


def embed_passages(embedder: Embedder, texts: Sequence[str], report: Progress) -> np.ndarray:
    """Passage vectors in batches, reporting the `embed` stage (chunks and windows alike)."""
    total = len(texts)
    vectors = np.zeros((total, embedder.dim), dtype=np.float32)
    report("embed", 0, total)
    for start in range(0, total, EMBED_BATCH):
        batch = texts[start : start + EMBED_BATCH]
        vectors[start : start + len(batch)] = embedder.embed_passages(list(batch))
        report("embed", start + len(batch), total)
    return vectors


def _write_temp(settings: Settings, digest: str, data: bytes) -> Path:
    """The upload's bytes in a temporary file, private (0600, in a 0700 folder) from creation."""
    private_dir(settings.uploads_dir)
    tmp = settings.uploads_dir / f".{digest}.{os.getpid()}.{time.monotonic_ns()}.tmp"
    try:
        with create_private(tmp) as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
    except BaseException:  # a full disk leaves no half-written file behind
        tmp.unlink(missing_ok=True)
        raise
    return tmp


# --------------------------------------------------------------------------- the transaction


# What a document's postings are built from (documents.lexical_version, migration 016): 1 the
# chunks' text, 2 `chunking.lexical_texts` (continuation chunks carry their article's heading).
# Documents stored at an older version are re-indexed by `ragcore.documents.lexical_index`.
LEXICAL_VERSION = 2


def _insert_document(conn: psycopg.Connection, meta: dict) -> int:
    """The documents row, current: version 1 of a new lineage unless `meta` names the lineage and
    version (a new version, whose predecessor `start_version` retired in this transaction)."""
    return conn.execute(
        """INSERT INTO documents (title, filename, sha256, size_bytes, page_count, skipped_pages,
                                  ocr_pages, allowed_roles, uploaded_by, file_format, lexical_version,
                                  oversized_pages, undrawable_pages, lineage, version_no, hidden_parts)
           VALUES (%(title)s, %(filename)s, %(sha256)s, %(size_bytes)s, %(page_count)s,
                   %(skipped_pages)s, %(ocr_pages)s, %(allowed_roles)s, %(uploaded_by)s, %(file_format)s,
                   %(lexical_version)s, %(oversized_pages)s, %(undrawable_pages)s,
                   coalesce(%(lineage)s::uuid, gen_random_uuid()), %(version_no)s, %(hidden_parts)s)
           RETURNING id""",
        {"lineage": None, "version_no": 1, **meta, "lexical_version": LEXICAL_VERSION},
    ).fetchone()[0]


# --------------------------------------------------------------------------- versions (migration 024)


def lineage_lock(lineage: str) -> str:
    """The transaction lock every change of one document's versions takes: a new version's store
    and a roll-back take turns, so the version numbers and the one current row stay right."""
    return f"dayanak-lineage:{lineage}"


def lock_lineage(conn: psycopg.Connection, lineage: str) -> None:
    conn.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", (lineage_lock(lineage),))


@dataclass(frozen=True)
class VersionBase:
    """The document a new version continues: its lineage and, as the new version's defaults, the
    current version's title and roles."""

    lineage: str
    title: str
    allowed_roles: tuple[str, ...]


def version_base(conn: psycopg.Connection, document_id: int) -> VersionBase:
    """The lineage of the document `document_id` (any of its versions) with its current version's
    title and roles; VersionBaseGone when it is no longer stored."""
    row = conn.execute(
        """SELECT cur.lineage::text, cur.title, cur.allowed_roles FROM documents d
           JOIN documents cur ON cur.lineage = d.lineage AND cur.is_current
           WHERE d.id = %s""", (document_id,)).fetchone()
    if row is None:
        raise VersionBaseGone()
    return VersionBase(row[0], row[1], tuple(row[2]))


def current_version_id(conn: psycopg.Connection, lineage: str) -> int | None:
    """The key of the lineage's current version (None: there is none); read under its lock."""
    row = conn.execute("SELECT id FROM documents WHERE lineage = %s::uuid AND is_current", (lineage,)).fetchone()
    return None if row is None else row[0]


def carry_collections(conn: psycopg.Connection, from_id: int, to_id: int) -> None:
    """Make the version `to_id` belong to exactly the collections of `from_id` (migration 025), in
    the caller's transaction: a collection holds a document, not one of its rows, so its
    memberships follow the lineage to whichever version becomes current (a new one, a roll-back)."""
    conn.execute("DELETE FROM collection_documents WHERE document_id = %s", (to_id,))
    conn.execute("INSERT INTO collection_documents (collection_id, document_id) "
                 "SELECT collection_id, %s FROM collection_documents WHERE document_id = %s", (to_id, from_id))


def start_version(conn: psycopg.Connection, lineage: str, digest: str) -> int:
    """Inside the store transaction of a new version: take the lineage's lock, refuse bytes that
    are already one of its versions (Turkish message), retire the current version and return the
    new version's number. The insert that follows makes the new one current in the same
    transaction, so no reader ever sees both versions or neither."""
    lock_lineage(conn, lineage)
    rows = conn.execute(
        """SELECT id, public_id::text, title, version_no, is_current, sha256 FROM documents
           WHERE lineage = %s::uuid ORDER BY version_no""", (lineage,)).fetchall()
    current = next((row for row in rows if row[4]), None)
    if current is None:
        raise VersionBaseGone()
    same = next((row for row in rows if row[5] == digest), None)
    if same is not None:
        raise DuplicateDocument(same[1], same[2], same_version_message(same[2], same[3], is_current=same[4]))
    conn.execute("UPDATE documents SET is_current = false, retired_at = now() WHERE id = %s", (current[0],))
    return max(row[3] for row in rows) + 1


def start_version_check(conn: psycopg.Connection, base: VersionBase, digest: str) -> None:
    """Before any slow work: bytes that are already one of the document's versions are refused
    at once (`start_version` checks again inside the store transaction)."""
    row = conn.execute(
        "SELECT public_id::text, title, version_no, is_current FROM documents WHERE lineage = %s::uuid AND sha256 = %s",
        (base.lineage, digest)).fetchone()
    if row is not None:
        raise DuplicateDocument(row[0], row[1], same_version_message(row[1], row[2], is_current=row[3]))


def same_version_message(title: str, version_no: int, *, is_current: bool) -> str:
    """A new version with the bytes of a stored one: which one, and what to do."""
    if is_current:
        return (f"Bu dosya “{title}” belgesinin güncel sürümüyle (sürüm {version_no}) aynı: içerik değişmemiş, yeni "
                "sürüm eklenmedi. Değiştirilmiş dosyayı seçin.")
    return (f"Bu dosya “{title}” belgesinin {version_no}. sürümüyle aynı; aynı dosya ikinci kez eklenmez. O sürüme "
            "dönmek için belgenin sürüm listesinde “Bu sürüme dön” düğmesini kullanın.")


def insert_chunks(
    conn: psycopg.Connection, document_id: int, chunks: Sequence[Chunk], vectors: np.ndarray, roles: list[str],
    lexical: Sequence[str],
) -> list[int]:
    """COPY the chunks with their vectors; return their ids in ordinal order. `lexical`: what
    the postings hold of each chunk (`chunking.lexical_texts`), whose token count is the
    chunk's BM25 length."""
    columns = ("document_id, ordinal, page_start, page_end, article, text, char_start, char_end, lex_length, "
               "allowed_roles, ocr, locator")
    with conn.cursor().copy(f"COPY chunks ({columns}, embedding) FROM STDIN") as copy:
        for chunk, vector, text in zip(chunks, vectors, lexical, strict=True):
            copy.write_row((
                document_id, chunk.ordinal, chunk.page_start, chunk.page_end, chunk.article, chunk.text,
                chunk.char_start, chunk.char_end, len(lexical_tokens(text)), roles, chunk.ocr, chunk.locator,
                vector,
            ))
    rows = conn.execute("SELECT id FROM chunks WHERE document_id = %s ORDER BY ordinal", (document_id,))
    return [row[0] for row in rows]


def insert_windows(conn: psycopg.Connection, chunk_ids: Sequence[int], windows: Sequence[Window],
                   vectors: np.ndarray) -> int:
    """COPY the chunks' windows with their vectors (`Window.chunk` indexes `chunk_ids`); the
    roles_mask is the chunk's, copied by the migration 012 trigger."""
    with conn.cursor().copy(
            "COPY chunk_windows (chunk_id, position, char_start, char_end, embedding) FROM STDIN") as copy:
        for window, vector in zip(windows, vectors, strict=True):
            copy.write_row((chunk_ids[window.chunk], window.position, window.char_start, window.char_end, vector))
    return len(windows)


def insert_postings(conn: psycopg.Connection, chunk_ids: Sequence[int], texts: Sequence[str]) -> int:
    """COPY (term, chunk_id, tf, doc_len, roles_mask) rows of the chunks' lexical texts
    (`chunking.lexical_texts`); statement triggers update the per-role statistics (migration 003).

    Each posting carries its chunk's length and role bits so the BM25 leg never joins chunks;
    both are read back from the chunk rows (roles_mask is generated there), and the trigger
    checks them once per chunk.
    """
    chunk_columns = dict(
        (row[0], row[1:]) for row in
        conn.execute("SELECT id, lex_length, roles_mask FROM chunks WHERE id = ANY(%s)", (list(chunk_ids),))
    )
    count = 0
    with conn.cursor().copy("COPY postings (term, chunk_id, tf, doc_len, roles_mask) FROM STDIN") as copy:
        for chunk_id, text in zip(chunk_ids, texts, strict=True):
            doc_len, roles_mask = chunk_columns[chunk_id]
            for term, tf in Counter(lexical_tokens(text)).items():
                copy.write_row((term, chunk_id, tf, doc_len, roles_mask))
                count += 1
    return count


def store_document(
    conn: psycopg.Connection, meta: dict, chunks: Sequence[Chunk], vectors: np.ndarray,
    report: Progress | None = None, *, windows: Sequence[Window] = (), window_vectors: np.ndarray | None = None,
) -> int:
    """Inside the caller's transaction: the documents row, its chunks with vectors, their
    windows with vectors (`windows.document_windows(chunks)`, when the index has windows) and
    postings of their lexical texts (`chunking.lexical_texts`: `chunks` are the whole document,
    in order).

    The one write path for document content: uploads use it, and so does the evaluation lab
    for its pre-chunked corpus. `meta` has the documents columns (title, filename, sha256,
    size_bytes, page_count, skipped_pages, ocr_pages, allowed_roles, uploaded_by, file_format,
    oversized_pages, undrawable_pages, hidden_parts).
    """
    tick: Progress = report or (lambda stage, done, total: None)
    document_id = _insert_document(conn, {"skipped_pages": [], "ocr_pages": [], "uploaded_by": None,
                                          "file_format": PDF, "oversized_pages": [], "undrawable_pages": [],
                                          "hidden_parts": [], **meta})
    tick("store", 1, 3)
    lexical = lexical_texts([chunk.text for chunk in chunks], [chunk.article for chunk in chunks])
    chunk_ids = insert_chunks(conn, document_id, chunks, vectors, meta["allowed_roles"], lexical)
    if windows:
        insert_windows(conn, chunk_ids, windows, window_vectors)
    tick("store", 2, 3)
    insert_postings(conn, chunk_ids, lexical)
    tick("store", 3, 3)
    return document_id


@dataclass(frozen=True)
class EmbeddedDocument:
    """A document's chunks and windows with their vectors, embedded in the index's space."""

    chunks: Sequence[Chunk]
    vectors: np.ndarray
    windows: Sequence[Window]
    window_vectors: np.ndarray
    space: dbmod.EmbeddingSpace


def embed_document(embedder: Embedder, chunks: Sequence[Chunk], space: dbmod.EmbeddingSpace,
                   report: Progress, ahead: EmbeddedAhead | None = None) -> EmbeddedDocument:
    """The chunks' vectors, and their windows' when the index is built with windows (`ahead`: the
    vectors embedded while the pages were read, `ragcore.documents.pipeline`)."""
    windows = document_windows(chunks) if space.windows else []
    texts = [c.text for c in chunks] + [w.text for w in windows]
    vectors = ahead.vectors_for(texts, report) if ahead is not None else embed_passages(embedder, texts, report)
    return EmbeddedDocument(chunks, vectors[: len(chunks)], windows, vectors[len(chunks):], space)


def _store(db: dbmod.Database, meta: dict, embedded: EmbeddedDocument, report: Progress) -> int:
    """The insert transaction, with the embedding model (and windows) checked again inside it."""
    report("store", 0, 3)
    space = embedded.space
    try:
        with db.connection() as conn:
            recorded = dbmod.lock_embedding_space(conn)
            if recorded != space or recorded.windows != space.windows:
                raise EmbeddingModelChanged(recorded.model if recorded else "yok", space.model)
            previous = None
            if meta.get("lineage"):
                lock_lineage(conn, meta["lineage"])  # taken again by start_version (advisory locks nest)
                previous = current_version_id(conn, meta["lineage"])
                meta = {**meta, "version_no": start_version(conn, meta["lineage"], meta["sha256"])}
            existing = find_by_sha256(conn, meta["sha256"])
            if existing:
                raise DuplicateDocument(*existing)
            stored = store_document(conn, meta, embedded.chunks, embedded.vectors, report,
                                    windows=embedded.windows, window_vectors=embedded.window_vectors)
            if previous is not None:
                carry_collections(conn, previous, stored)
            return stored
    except psycopg.errors.UniqueViolation as exc:  # a writer that does not take the upload lock won
        existing = _existing(db, meta["sha256"])
        raise DuplicateDocument(*existing) if existing else IngestError(str(exc)) from exc
    except psycopg.errors.DiskFull as exc:  # the server could not extend a file: the transaction rolled back
        log.error("upload %s not stored, the database's disk is full: %s", meta["filename"], exc)
        raise IngestError(DISK_FULL) from exc
    except psycopg.Error as exc:
        raise IngestError(f"Belge veritabanına yazılamadı: {exc}") from exc


# --------------------------------------------------------------------------- entry point


def ingest_file(
    db: dbmod.Database,
    settings: Settings,
    embedder: Embedder,
    data: bytes,
    *,
    filename: str,
    roles: Iterable[str],
    title: str | None = None,
    uploaded_by: str | None = None,
    progress: Progress | None = None,
    new_version_of: int | None = None,
) -> IngestResult:
    """Validate, extract, chunk, embed and store one PDF, .docx, .xlsx or .pptx; all or nothing.

    `new_version_of` (a document's key, any of its versions): store the file as that document's
    next version, switched in when it is stored (migration 024). Its roles default to the
    current version's (`roles` empty), its title to the current version's (`title` None)."""
    started = time.perf_counter()
    report: Progress = progress or (lambda stage, done, total: None)
    base = None
    digest = sha256_bytes(data)
    with db.connection() as conn:
        if new_version_of is not None:
            base = version_base(conn, new_version_of)
            title = title or base.title
            roles = list(roles or ()) or list(base.allowed_roles)
            start_version_check(conn, base, digest)
        existing = find_by_sha256(conn, digest)
    allowed = validate_roles(db, roles)
    check_size(data, settings)
    check_free_space(settings)
    if existing:
        raise DuplicateDocument(*existing)

    ahead = _embedded_ahead(db, settings, embedder)
    try:
        extracted = read_while_embedding(
            lambda progress, sink: read_upload(data, filename, progress, settings, page_sink=sink), ahead, report)
    except EmbeddingError as exc:  # embedding the pages read so far failed; the reading stopped
        raise IngestError(str(exc)) from exc
    sizes = _page_sizes(settings, extracted, data)
    chunks = extracted.chunks(settings)
    report("chunk", len(chunks), len(chunks))
    try:
        space = dbmod.ensure_embedding_space(db, embedder.name, embedder.dim, windows=settings.dense_windows)
        embedded = embed_document(embedder, chunks, space, report, ahead)
    except dbmod.EmbeddingModelMismatch as exc:
        log.error("upload %r refused: %s", filename, exc)  # names the command
        raise IndexModelMismatch(exc.recorded, exc.configured) from exc
    except EmbeddingError as exc:
        raise IngestError(str(exc)) from exc

    name = sanitize(Path(filename).name, single_line=True) or f"belge{extension(extracted.file_format)}"
    meta = {
        "title": sanitize(title or "", single_line=True).strip()[:MAX_TITLE_CHARS]
        or default_title(name, extracted.title, extracted.pages[0].text),
        "filename": name,
        "sha256": digest,
        "size_bytes": len(data),
        "page_count": extracted.page_count,
        "skipped_pages": extracted.skipped_pages,
        "ocr_pages": extracted.ocr_pages,
        "oversized_pages": sizes.reduced,
        "undrawable_pages": sizes.refused,
        "allowed_roles": allowed,
        "uploaded_by": uploaded_by,
        "file_format": extracted.file_format,
        "lineage": base.lineage if base else None,
        "hidden_parts": extracted.hidden_parts,
    }
    document_id = _store_with_file(db, settings, meta, data, embedded, report)
    _keep_ocr_readings(settings, digest, extracted.ocr_results)
    seconds = time.perf_counter() - started
    log.info("ingested %s as document %d: %d pages (%d by OCR), %d chunks in %.2fs", name, document_id,
             extracted.page_count, len(extracted.ocr_pages), len(chunks), seconds)
    public_id, version_no = _public_id(db, document_id)
    return IngestResult(document_id, meta["title"], extracted.page_count, len(chunks), seconds, extracted.skipped_pages,
                        public_id=public_id, version_no=version_no, windows=len(embedded.windows),
                        file_format=extracted.file_format, ocr_pages=extracted.ocr_pages,
                        oversized_pages=sizes.reduced, undrawable_pages=sizes.refused,
                        too_large_for_ocr=extracted.too_large_for_ocr, hidden_parts=extracted.hidden_parts)


def _embedded_ahead(db: dbmod.Database, settings: Settings, embedder: Embedder) -> EmbeddedAhead:
    """Where the vectors embedded while the pages are read go (`ragcore.documents.pipeline`): with
    the index's windows, or the setting's for a first upload. An index of another model embeds
    nothing ahead: the upload is refused after reading, as before."""
    space = dbmod.current_embedding_space(db)
    return EmbeddedAhead(embedder, settings.chunk_size, settings.chunk_overlap,
                         windows=space.windows if space is not None else settings.dense_windows,
                         guess=space is None or space.same_model(embedder.name, embedder.dim))


# The entry point's first name, from when only PDFs were read: the lab, the benchmarks and the
# tests still call it by it.
ingest_pdf = ingest_file


def mark_ocr(chunks: Sequence[Chunk], ocr_pages: Iterable[int]) -> list[Chunk]:
    """The chunks, each marked `ocr` when one of its pages was read by OCR."""
    scanned = set(ocr_pages)
    return [replace(c, ocr=any(n in scanned for n in range(c.page_start, c.page_end + 1))) if scanned else c
            for c in chunks]


def _keep_ocr_readings(settings: Settings, digest: str, results: dict) -> None:
    """After the commit: the OCR readings for the page dialog (a failure costs a re-read on first view)."""
    if not results:
        return
    try:
        page_images.keep_ocr(settings, digest, results)
    except OSError as exc:
        log.warning("could not keep the OCR readings of %s… (%s); the page dialog reads them again", digest[:12], exc)


def _store_with_file(
    db: dbmod.Database, settings: Settings, meta: dict, data: bytes, embedded: EmbeddedDocument, report: Progress,
) -> int:
    """File in place first, then the transaction: a committed document always has its file.

    All of it under the upload lock of these bytes, clean-up included: while this upload holds
    it, no other upload of the same bytes can place its file or commit, so removing the file
    after a failure (or Ctrl-C, or a Streamlit rerun) can only remove this upload's own copy.
    A crash anywhere leaves at most an unreferenced file, which the repeated upload overwrites
    and `ragcore.documents.orphans.remove_orphan_files` collects.
    """
    digest = meta["sha256"]
    with db.advisory_lock(upload_lock(digest)) as lock:
        existing = find_by_sha256(lock, digest)
        if existing:
            raise DuplicateDocument(*existing)
        final = stored_path(settings, digest, meta["file_format"])
        try:
            tmp = _write_temp(settings, digest, data)
        except OSError as exc:
            raise _unwritten(exc, "Dosya kaydedilemedi") from exc
        try:
            os.replace(tmp, final)
        except OSError as exc:
            tmp.unlink(missing_ok=True)
            raise _unwritten(exc, "Dosya kaydedilemedi") from exc
        try:
            return _store(db, meta, embedded, report)
        except BaseException:
            _discard_file(lock, final, digest)
            raise


def _public_id(db: dbmod.Database, document_id: int) -> tuple[str, int]:
    """The stored document's public id and version number."""
    with db.connection() as conn:
        row = conn.execute("SELECT public_id::text, version_no FROM documents WHERE id = %s", (document_id,)).fetchone()
    return row[0], row[1]


def _existing(db: dbmod.Database, digest: str) -> tuple[str, str] | None:
    with db.connection() as conn:
        return find_by_sha256(conn, digest)


def _discard_file(lock: psycopg.Connection, path: Path, digest: str) -> None:
    """After a failed store, with the upload lock still held: remove the file unless a committed
    document refers to it (this upload's own, when the failure came after the commit)."""
    try:
        referenced = find_by_sha256(lock, digest) is not None
    except psycopg.Error as exc:  # the lock went with its connection: keep the file, the sweep decides
        log.warning("kept %s after a failed upload: cannot check whether a document refers to it (%s)",
                    path.name, exc)
        return
    if not referenced:
        path.unlink(missing_ok=True)

