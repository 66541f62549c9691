"""Records that cross module boundaries. Frozen, so nobody edits a source after it was cited."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, datetime

STATUS_ANSWERED = "answered"
STATUS_FALLBACK = "fallback"
STATUS_NEEDS_REVIEW = "needs_review"
STATUS_ERROR = "error"

FALLBACK_ANSWER = "Bu sorunun cevabı erişebildiğiniz dokümanlarda bulunmuyor."
CLOSEST_LEAD = "Sorunuza doğrudan cevap veren bir parça bulamadım; en yakın parçalar şunlar:"

# What the user was told (ragcore.retrieval.abstention decides between the first two and a refusal).
OUTCOME_ANSWER = "answer"
OUTCOME_CLOSEST = "closest"
OUTCOME_REFUSED = "refused"
OUTCOMES = (OUTCOME_ANSWER, OUTCOME_CLOSEST, OUTCOME_REFUSED)


# Which kind of place a source's citation names: a PDF's pages ("s. 7"), a Word file's section
# and paragraph ("§ BİRİNCİ BÖLÜM · paragraf 2"; a .docx has no pages), an Excel sheet's rows
# ("Sayfa1 · satır 12–30") or a PowerPoint slide ("slayt 7").
LOCATOR_PAGE = "page"
LOCATOR_SECTION = "section"
LOCATOR_ROWS = "rows"
LOCATOR_SLIDE = "slide"
LOCATOR_KINDS = (LOCATOR_PAGE, LOCATOR_SECTION, LOCATOR_ROWS, LOCATOR_SLIDE)


@dataclass(frozen=True)
class Page:
    """Text of one PDF page, or of one section of a Word file; `number` is 1-based as printed
    in citations (a Word file's sections are numbered in order). `ocr`: the text was recognised
    by OCR from the page's image (no text layer), so it may hold recognition errors."""

    number: int
    text: str
    ocr: bool = False


@dataclass(frozen=True)
class Chunk:
    """A piece of a document as produced by the chunker, before it is stored.

    `char_start`/`char_end` index into the text the chunker was given (the pages joined, or a
    TQuAD article), so the evaluation lab can test whether a chunk contains an answer span.
    `locator` is a Word file's section label (`ragcore.documents.word.locate`), an Excel chunk's
    sheet and rows, a PowerPoint chunk's slide; None for a PDF.
    """

    ordinal: int
    text: str
    page_start: int
    page_end: int
    article: str | None
    char_start: int
    char_end: int
    locator: str | None = None
    ocr: bool = False  # some of its pages were read by OCR


@dataclass(frozen=True)
class Document:
    """A stored document: `id` is the database key, `public_id` the one users see (core.public_ids)."""

    id: int
    title: str
    filename: str
    sha256: str
    page_count: int
    allowed_roles: tuple[str, ...]
    uploaded_by: str | None
    created_at: datetime
    chunk_count: int = 0
    size_bytes: int = 0
    skipped_pages: tuple[int, ...] = ()
    public_id: str = ""
    file_format: str = "pdf"  # "pdf" | "docx" | "xlsx" | "pptx" (ragcore.documents.formats): told by the bytes at upload
    ocr_pages: tuple[int, ...] = ()  # pages whose text was read by OCR
    oversized_pages: tuple[int, ...] = ()  # pages whose image is drawn smaller (too large for the pixel budget)
    undrawable_pages: tuple[int, ...] = ()  # pages too large to draw as an image at all
    # Versions (migration 024): the rows of one document share `lineage`; one of them is current,
    # the others are kept for the audit trail and never retrieved. `created_at` is the version's date.
    version_no: int = 1
    is_current: bool = True
    lineage: str = ""
    hidden_parts: tuple[str, ...] = ()  # not read, hidden by the author: a .xlsx's sheets by name, a .pptx's slides by number

    @property
    def version_label(self) -> str:
        """"sürüm 2 · 06.12.2026": the version and the day it was uploaded."""
        return version_label(self.version_no, self.created_at)


def version_label(version_no: int, uploaded_at: datetime | date | None) -> str:
    """"sürüm 2 · 06.12.2026", the day in the server's time zone as every date shown ("sürüm 2"
    when the date is unknown)."""
    if isinstance(uploaded_at, datetime) and uploaded_at.tzinfo is not None:
        uploaded_at = uploaded_at.astimezone()
    return f"sürüm {version_no}" + (f" · {uploaded_at:%d.%m.%Y}" if uploaded_at else "")


@dataclass(frozen=True)
class Source:
    """A retrieved chunk as shown to a user and cited as [rank].

    `chunk_id` and `document_id` are database keys, for the code; `as_dict` (what the API and
    the CLI print) names the document by `document_public_id` (ragcore.core.public_ids).
    `locator_kind` says what the citation names: LOCATOR_PAGE (page_start/page_end are pages)
    or LOCATOR_SECTION (a Word file: page_start/page_end number its sections, and `locator` is
    the label "§ BİRİNCİ BÖLÜM · paragraf 2"), LOCATOR_ROWS (an Excel file: page_start is the
    sheet's number, `locator` "Sayfa1 · satır 12–30") or LOCATOR_SLIDE (a PowerPoint file:
    page_start is the slide's number, `locator` "slayt 7").
    """

    rank: int
    chunk_id: int
    document_id: int
    title: str
    filename: str
    page_start: int
    page_end: int
    article: str | None
    score: float
    text: str
    document_public_id: str = ""
    locator_kind: str = LOCATOR_PAGE
    locator: str | None = None
    ocr: bool = False  # the passage was read by OCR from a scanned page: check it on the page image
    version_no: int = 1  # the document's version it was read from (migration 024) and that version's date
    version_date: datetime | None = None

    @property
    def version_label(self) -> str:
        """"sürüm 2 · 06.12.2026": which version of the document the passage is from."""
        return version_label(self.version_no, self.version_date)

    @property
    def page_label(self) -> str:
        if self.page_start == self.page_end:
            return f"s. {self.page_start}"
        return f"s. {self.page_start}–{self.page_end}"

    @property
    def locator_label(self) -> str:
        """Where the passage is, as cited: "s. 7" for a PDF, the stored label for the others."""
        if self.locator_kind != LOCATOR_PAGE and self.locator:
            return self.locator
        return self.page_label

    def as_dict(self) -> dict:
        return {
            "rank": self.rank,
            "document_id": self.document_public_id,
            "title": self.title,
            "filename": self.filename,
            "page_start": self.page_start,
            "page_end": self.page_end,
            "article": self.article,
            "locator_kind": self.locator_kind,
            "locator": self.locator_label,
            "score": self.score,
            "text": self.text,
            "ocr": self.ocr,
            "version": {"number": self.version_no,
                        "date": self.version_date.isoformat() if self.version_date else None,
                        "label": self.version_label},
        }


ADMIN_ROLE = "admin"
READER_SEPARATOR = "+"


def reader_key(roles: tuple[str, ...] | list[str]) -> str:
    """The reader (migration 021) of a set of roles: 'admin' when it holds admin (who reads
    everything), else the roles sorted and joined by '+' ('isg', 'isg+uretim'). Role names
    never hold '+', so the key names one set. Retrieval, the statistics and the document
    catalog are keyed by it."""
    if ADMIN_ROLE in roles:
        return ADMIN_ROLE
    return READER_SEPARATOR.join(sorted(set(roles)))


def reader_members(reader: str) -> tuple[str, ...]:
    """The roles of a reader key (`reader_key`'s inverse)."""
    return tuple(reader.split(READER_SEPARATOR))


@dataclass(frozen=True)
class User:
    """A user with every role they hold (`user_roles`, migration 021; sorted, at least one)."""

    id: int
    username: str
    display_name: str
    roles: tuple[str, ...]
    active: bool
    email: str | None = None

    @property
    def is_admin(self) -> bool:
        """Admin is special: reads every document and manages the house."""
        return ADMIN_ROLE in self.roles

    @property
    def reader(self) -> str:
        """What the user may read, as one key (`reader_key`): retrieval, the statistics and the
        catalog take it where they took a role."""
        return reader_key(self.roles)

    @property
    def role(self) -> str:
        """The reader key under the name code written for one role per user used; new code says
        `reader` (what the user reads) or `roles` (what they hold)."""
        return self.reader


@dataclass(frozen=True)
class Answer:
    question: str
    text: str
    status: str
    generator: str
    llm_called: bool
    sources: tuple[Source, ...] = ()
    cited: tuple[int, ...] = ()
    question_id: str | None = None  # the logged question's public id; None when it could not be logged
    retrieval_ms: float | None = None
    first_token_ms: float | None = None
    total_ms: float | None = None
    notice: str | None = None
    outcome: str | None = OUTCOME_ANSWER  # None: the question failed (status error)
    # The closest outcome: per source, in order, its sentence nearest the question (marked where
    # the passage is shown; "" when it has none). Empty for the other outcomes.
    nearest: tuple[str, ...] = ()
    extra: dict = field(default_factory=dict, compare=False)

    @property
    def is_fallback(self) -> bool:
        return self.status in (STATUS_FALLBACK, STATUS_NEEDS_REVIEW)


@dataclass(frozen=True)
class BackendChoice:
    """Which backend `auto` (or the configuration) picked, and why — shown by doctor and the log."""

    kind: str  # embeddings: "e5" | "ollama" | "use"; generation: "ollama" | "openai" | "extractive"
    model: str
    reason: str  # English, for the log and `doctor`
    # The same reason as codes, for a translated rendering (the app's Turkish health panel):
    # "setting", "ollama_has_model", "ollama_missing_model", "ollama_unreachable",
    # "cpu_lacks_e5", "openai_reachable", "openai_unreachable".
    causes: tuple[str, ...] = ()
