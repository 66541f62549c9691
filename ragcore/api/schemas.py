"""Request and response bodies (pydantic): what the OpenAPI document at /docs shows.

Requests forbid unknown fields and do not coerce types (`{"question": 5}` is a 422, not "5").
Responses are built from the product's records (`Answer`, `Source`, `Document`, `Job`), never
from anything the caller's role could not see. Every id in them is a public id (a random UUID,
ragcore.core.public_ids), typed as one, so a sequential key cannot slip into a response.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field, StrictInt, field_validator
from pydantic_core import PydanticCustomError

from ragcore.answer import MAX_COMMENT_CHARS
from ragcore.audit import AuditPage, AuditRow, ShownPassage
from ragcore.conversations import Citation, Conversation, PreparedTurn, Turn
from ragcore.core import Answer, Document, Source

PublicId = Annotated[UUID, Field(description="opaque id (a random UUID); the same in every path and body")]


class _Request(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class ErrorDetail(BaseModel):
    code: str = Field(description="stable machine-readable code, e.g. `invalid_token`, `document_not_found`")
    message_tr: str
    message_en: str


class ErrorResponse(BaseModel):
    error: ErrorDetail


# ----------------------------------------------------------------------------- the audit trail


class ShownPassageOut(BaseModel):
    rank: int = Field(description="the [n] the asker saw")
    document_id: PublicId | None = Field(description="the document's public id (null for rows logged before the "
                                                     "audit trail)")
    title: str
    filename: str
    locator: str = Field(description='where the passage is: "s. 7" or a Word section label')
    article: str | None
    sha256: str | None = Field(description="the document's file at the time (null: deleted before it was recorded)")
    uploaded_at: datetime | None
    use: Literal["cited", "unused", "closest", "shown"] = Field(
        description="cited by the answer | shown under it, not used | one of the closest passages | shown "
                    "(logged before cited and unused were told apart)")

    @classmethod
    def of(cls, passage: ShownPassage) -> ShownPassageOut:
        return cls(rank=passage.rank, document_id=passage.document_id, title=passage.title,
                   filename=passage.filename, locator=passage.locator, article=passage.article,
                   sha256=passage.sha256, uploaded_at=passage.uploaded_at, use=passage.use)


class AuditQuestionOut(BaseModel):
    question_id: PublicId
    asked_at: datetime
    username: str
    roles: list[str] = Field(description="every role the asker held when asking")
    question: str
    outcome: Literal["answer", "closest", "refused", "error"]
    outcome_label: str = Field(description="the outcome in Turkish")
    answer: str | None
    error: str | None
    passages: list[ShownPassageOut] = Field(description="every passage the asker was shown, in order")
    feedback: Literal[-1, 1] | None
    feedback_comment: str | None

    @classmethod
    def of(cls, row: AuditRow) -> AuditQuestionOut:
        return cls(question_id=row.question_id, asked_at=row.asked_at, username=row.username, roles=list(row.roles),
                   question=row.question, outcome=row.outcome, outcome_label=row.outcome_label, answer=row.answer,
                   error=row.error, passages=[ShownPassageOut.of(p) for p in row.passages], feedback=row.feedback,
                   feedback_comment=row.feedback_comment)


class AuditQuestionList(BaseModel):
    total: int = Field(description="questions matching the filters")
    page: int
    page_size: int
    pages: int
    questions: list[AuditQuestionOut] = Field(description="newest first")

    @classmethod
    def of(cls, page: AuditPage) -> AuditQuestionList:
        return cls(total=page.total, page=page.page, page_size=page.page_size, pages=page.pages,
                   questions=[AuditQuestionOut.of(r) for r in page.rows])


# ----------------------------------------------------------------------------- chat


class ChatRequest(_Request):
    question: str = Field(description="Türkçe soru / the question (1 … MAX_QUESTION_CHARS characters)",
                          examples=["İşveren risk değerlendirmesi yapmakla yükümlü müdür?"])
    conversation_id: str | None = Field(
        default=None, max_length=64,
        description="the conversation to ask in (`conversation_id` of an earlier answer): a follow-up is understood "
                    "from its earlier questions; absent or null: a new conversation is created")
    collection: str | None = Field(
        default=None, max_length=64,
        description="search only this collection (`id` from GET /v1/collections); one missing or holding no document "
                    "the caller may read is a 404 `collection_not_found`. The restriction is this question's own: "
                    "send it with every question that should keep it")
    document: str | None = Field(
        default=None, max_length=64,
        description="search only this document (its `document_id`); missing or not readable: 404 `document_not_found`. "
                    "At most one of `collection` and `document` (both: 422 `scope_conflict`)")


class Understood(BaseModel):
    """How the question was understood: a follow-up is rewritten into a standalone question."""

    asked: str = Field(description="the question as typed")
    question: str = Field(description="what was searched and answered")
    rewritten: bool
    method: Literal["none", "rules", "llm"] = Field(
        description='"none": taken as typed; "rules": the follow-up rules; "llm": the language model')
    shown: str | None = Field(description='the line to show above the answer ("Şöyle anladım: …"), null when '
                                          'not rewritten')
    notice: str | None = Field(default=None, description="set when the language model could not rewrite it")

    @classmethod
    def of(cls, prepared: PreparedTurn) -> Understood:
        r = prepared.resolution
        return cls(asked=prepared.question, question=r.question, rewritten=r.rewritten, method=r.method,
                   shown=r.shown, notice=r.notice)


class SourceVersionOut(BaseModel):
    number: int = Field(description="the document's version (1 for its first upload)")
    date: datetime | None = Field(description="when that version was uploaded")
    label: str = Field(description='as cited: "sürüm 2 · 06.12.2026"')


class SourceOut(BaseModel):
    rank: int = Field(description="the [n] the answer cites")
    document_id: PublicId
    title: str
    filename: str
    page_start: int = Field(description="first page; for a Word file (locator_kind `section`), its section number; "
                                        "for an Excel file (`rows`) its sheet's number; for a PowerPoint file "
                                        "(`slide`) its slide's number")
    page_end: int
    page_label: str = Field(description='where the passage is, as cited: "s. 7", "s. 7–8", or for a Word file '
                                        '"§ BİRİNCİ BÖLÜM · paragraf 2", an Excel file "Sayfa1 · satır 12–30", a '
                                        'PowerPoint file "slayt 7" (the same as `locator`)')
    article: str | None
    locator_kind: Literal["page", "section", "rows", "slide"] = Field(
        description='"page": a PDF, cited by pages; "section": a Word file (no pages), cited by heading and paragraph; '
                    '"rows": an Excel file, cited by sheet and rows; "slide": a PowerPoint file, cited by slide')
    locator: str = Field(description='where the citation points: "s. 7", "§ BİRİNCİ BÖLÜM · paragraf 2", '
                                     '"Sayfa1 · satır 12–30" or "slayt 7"')
    score: float
    text: str
    ocr: bool = Field(description="the passage was read by OCR from a scanned page: check it on the page itself")
    version: SourceVersionOut = Field(description="the document's version the passage is from")

    @classmethod
    def of(cls, source: Source) -> SourceOut:
        return cls(**source.as_dict(), page_label=source.locator_label)


class Timings(BaseModel):
    retrieval_ms: float | None
    first_token_ms: float | None
    total_ms: float | None


class ChatAnswer(BaseModel):
    question: str
    text: str = Field(description="the answer with [n] citations (or the fallback sentence)")
    status: str = Field(description="answered | fallback | needs_review | error")
    outcome: Literal["answer", "closest", "refused"] | None = Field(
        description='what the user was told: "answer" (cited answer), "closest" (the closest permitted passages, '
                    'no answer; queued for review) or "refused" (not in the documents); null when the question failed')
    generator: str = Field(description='"ollama:<model>", "openai:<model>", "extractive" or "none"')
    llm_called: bool
    cited: list[int]
    sources: list[SourceOut]
    nearest_sentences: list[str] = Field(
        description='outcome "closest": per source, in order, its sentence nearest the question, verbatim from its '
                    '`text` ("" when it has none) — a mark for the reader, not an answer; empty otherwise')
    question_id: UUID | None = Field(description="for POST /v1/questions/{id}/feedback (a random UUID)")
    notice: str | None = Field(
        description="Turkish note on why `text` is not the model's own answer, when it is not: the model failed, or "
                    "its answer was cut (time limit, length limit, repeating itself, echoing its instructions or the "
                    "documents; status error) or found unreliable; `text` then quotes the documents")
    timings: Timings
    conversation_id: UUID | None = Field(default=None, description="the conversation the question was saved in; "
                                                                   "send it with the next question")
    turn: int | None = Field(default=None, description="the question's number in its conversation (from 1)")
    understood: Understood | None = Field(default=None, description="how the question was understood")

    @classmethod
    def of(cls, answer: Answer, *, conversation_id: str | None = None, turn: int | None = None,
           understood: Understood | None = None) -> ChatAnswer:
        return cls(
            question=answer.question, text=answer.text, status=answer.status, outcome=answer.outcome,
            generator=answer.generator,
            llm_called=answer.llm_called, cited=list(answer.cited), sources=[SourceOut.of(s) for s in answer.sources],
            nearest_sentences=list(answer.nearest), question_id=answer.question_id, notice=answer.notice,
            timings=Timings(retrieval_ms=answer.retrieval_ms, first_token_ms=answer.first_token_ms,
                            total_ms=answer.total_ms),
            conversation_id=conversation_id, turn=turn, understood=understood,
        )


class ChatDone(ChatAnswer):
    """The last server-sent event (`event: done`)."""

    replaced: bool = Field(description="true when `text` differs from the streamed pieces (a refusal or an "
                                       "unreliable model answer was replaced): show `text`, not the pieces")


# ----------------------------------------------------------------------------- collections


class CollectionOut(BaseModel):
    id: PublicId
    name: str
    description: str
    documents: int = Field(description="how many of its documents the caller may read (no others are counted)")


class CollectionList(BaseModel):
    collections: list[CollectionOut] = Field(description="the collections the caller can ask within, by name: those "
                                                         "holding a document the caller may read (admin: every one)")


# ----------------------------------------------------------------------------- roles


class RoleOut(BaseModel):
    name: str = Field(description="what `roles` of POST /v1/documents and an admin's `role=` take")
    label: str = Field(description="the name people see in the app")
    description: str
    builtin: bool = Field(description="a role with powers of its own (admin, denetci): it cannot be deleted")


class RoleList(BaseModel):
    roles: list[RoleOut] = Field(description="admin: every role, admin first, then the built-in ones, then the "
                                             "company's own in the order they were made; anyone else: their own")


# ----------------------------------------------------------------------------- search


class SearchHit(SourceOut):
    dense_score: float | None = Field(description="cosine of the dense leg, if the chunk was a dense candidate")
    lexical_score: float | None = Field(description="BM25 of the lexical leg, if the chunk was a lexical candidate")


class EvidenceOut(BaseModel):
    best_cosine: float | None
    best_bm25: float | None
    coverage: float
    permitted_hits: int


class ThresholdOut(BaseModel):
    signal: str = Field(description="cosine | coverage | mean | …")
    value: float
    measured: str = Field(description="where the value comes from")
    score: float = Field(description="the evidence's score on that signal")
    refuse: bool = Field(description="true: the chat would answer with the fallback sentence, without a model")


class SearchResult(BaseModel):
    question: str
    role: str
    mode: str
    k: int
    results: list[SearchHit]
    evidence: EvidenceOut
    threshold: ThresholdOut
    retrieval_ms: float


# ----------------------------------------------------------------------------- documents and jobs


class DocumentOut(BaseModel):
    id: PublicId
    title: str
    filename: str
    pages: int
    chunks: int
    size_bytes: int
    allowed_roles: list[str]
    uploaded_by: str | None
    created_at: datetime
    skipped_pages: list[int]
    file_format: Literal["pdf", "docx", "xlsx", "pptx"] = Field(
        description="told by the file's content; a docx's `pages` counts its sections (it has no pages), a xlsx's "
                    "its sheets, a pptx's its slides")
    ocr_pages: list[int] = Field(description="pages whose text was read by OCR (scanned, no text layer)")
    oversized_pages: list[int] = Field(default_factory=list, description="pages too large for the pixel budget "
                                       "(RENDER_MAX_MEGAPIXELS) at the page image's resolution: drawn smaller")
    undrawable_pages: list[int] = Field(default_factory=list, description="pages too large to draw as an image "
                                        "even at PAGE_IMAGE_MIN_DPI: their page image answers 422 page_too_large")
    version: int = Field(default=1, description="this row's version of the document (GET …/versions lists them)")
    current: bool = Field(default=True, description="false: a kept earlier version, never retrieved")
    hidden_parts: list[str] = Field(default_factory=list, description="not read because their author hid them: a "
                                    "xlsx's hidden sheets by name, a pptx's hidden slides by number")

    @classmethod
    def of(cls, doc: Document) -> DocumentOut:
        return cls(id=doc.public_id, title=doc.title, filename=doc.filename, pages=doc.page_count, chunks=doc.chunk_count,
                   size_bytes=doc.size_bytes, allowed_roles=list(doc.allowed_roles), uploaded_by=doc.uploaded_by,
                   created_at=doc.created_at, skipped_pages=list(doc.skipped_pages), file_format=doc.file_format,
                   ocr_pages=list(doc.ocr_pages), oversized_pages=list(doc.oversized_pages),
                   undrawable_pages=list(doc.undrawable_pages), version=doc.version_no, current=doc.is_current,
                   hidden_parts=list(doc.hidden_parts))


class DocumentVersionOut(BaseModel):
    document_id: PublicId = Field(description="this version's own public id (GET /v1/documents/{id} reads it)")
    version: int
    current: bool
    label: str = Field(description='"sürüm 2 · 06.12.2026"')
    uploaded_at: datetime
    uploaded_by: str | None
    filename: str
    chunks: int
    retired_at: datetime | None = Field(description="when it last stopped being the current version")


class DocumentVersionList(BaseModel):
    versions: list[DocumentVersionOut] = Field(description="newest first, those the caller's role may read")


class ChunkOut(BaseModel):
    ordinal: int
    page_start: int
    page_end: int
    article: str | None
    locator: str | None = Field(default=None, description="a Word file's section label, an Excel file's sheet and "
                                                          "rows, a PowerPoint file's slide; null for a PDF")
    text: str


class DocumentDetail(DocumentOut):
    chunk_texts: list[ChunkOut] | None = Field(default=None, description="with ?chunks=true")


class DocumentList(BaseModel):
    documents: list[DocumentOut]


class Deleted(BaseModel):
    deleted: DocumentOut


class JobOut(BaseModel):
    job_id: PublicId
    kind: str
    label: str
    status: str = Field(description="queued | running | succeeded | failed | cancelled")
    stage: str | None
    done: int
    total: int
    progress: float = Field(description="0–1 over every stage")
    seconds_left: float | None
    attempts: int
    created_by: str | None
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    cancel_requested: bool
    result: dict[str, Any] | None
    error: str | None = Field(description="Turkish reason when it failed")
    live_workers: int | None = Field(default=None, description="workers seen recently (0: the job waits)")


# ----------------------------------------------------------------------------- conversations


class ConversationOut(BaseModel):
    id: PublicId
    title: str = Field(description="the first question (cut to 120 characters) or the name its owner gave it")
    created_at: datetime
    updated_at: datetime = Field(description="the last question; retention counts from here")
    turn_count: int = Field(description="questions asked in it")

    @classmethod
    def of(cls, conversation: Conversation) -> ConversationOut:
        return cls(id=conversation.id, title=conversation.title, created_at=conversation.created_at,
                   updated_at=conversation.updated_at, turn_count=conversation.turn_count)


class ConversationList(BaseModel):
    conversations: list[ConversationOut] = Field(description="the caller's own, most recently used first")


class VersionOut(BaseModel):
    sha256: str = Field(description="the cited version's file's sha256")
    uploaded_at: datetime | None
    number: int | None = Field(default=None, description="the cited version's number (null for answers given "
                                                         "before documents had versions)")
    label: str = Field(default="", description='as cited: "sürüm 2 · 06.12.2026"')


class CitationOut(BaseModel):
    number: int = Field(description="the [n] of the answer")
    document_id: PublicId
    title: str
    article: str | None
    heading: str = Field(description="the article's title, \"\" when unknown")
    locator: str = Field(description='"s. 7", a Word file\'s "§ BİRİNCİ BÖLÜM · paragraf 2", an Excel file\'s '
                                     '"Sayfa1 · satır 12–30" or a PowerPoint file\'s "slayt 7"')
    locator_kind: Literal["page", "section", "rows", "slide"]
    page_start: int
    page_end: int
    version: VersionOut | None

    @classmethod
    def of(cls, citation: Citation) -> CitationOut:
        version = citation.version
        return cls(number=citation.number, document_id=citation.document_id, title=citation.title,
                   article=citation.article, heading=citation.heading, locator=citation.locator,
                   locator_kind=citation.locator_kind, page_start=citation.page_start, page_end=citation.page_end,
                   version=VersionOut(sha256=version.sha256, uploaded_at=version.uploaded_at, number=version.number,
                                      label=version.label) if version else None)


class TurnOut(BaseModel):
    turn: int = Field(description="its number in the conversation (from 1)")
    question: str = Field(description="as typed")
    resolved_question: str = Field(description="what was searched and answered")
    method: Literal["none", "rules", "llm"]
    shown: str | None = Field(description='"Şöyle anladım: …" when the question was rewritten')
    answer: str
    status: str
    outcome: Literal["answer", "closest", "refused"] | None
    hidden: bool = Field(description="the answer is hidden: it cites a document the caller may no longer read")
    citations: list[CitationOut]
    question_id: UUID | None = Field(description="the logged question (for feedback)")
    created_at: datetime | None

    @classmethod
    def of(cls, turn: Turn) -> TurnOut:
        return cls(turn=turn.position, question=turn.question, resolved_question=turn.resolved_question,
                   method=turn.method, shown=turn.shown, answer=turn.answer_text, status=turn.status,
                   outcome=turn.outcome, hidden=turn.hidden, citations=[CitationOut.of(c) for c in turn.citations],
                   question_id=turn.question_id, created_at=turn.created_at)


class ConversationDetail(ConversationOut):
    turns: list[TurnOut] = Field(description="every question, oldest first, as the caller may read it now")

    @classmethod
    def of(cls, conversation: Conversation) -> ConversationDetail:
        return cls(**ConversationOut.of(conversation).model_dump(),
                   turns=[TurnOut.of(t) for t in conversation.turns])


class RenameRequest(_Request):
    title: str = Field(max_length=1000, description="the new name (at most 120 characters)")


class ConversationDeleted(BaseModel):
    deleted: PublicId


# ----------------------------------------------------------------------------- feedback and health


class FeedbackRequest(_Request):
    value: StrictInt = Field(description="+1 useful, -1 not useful (a -1 lands in the review queue)")
    comment: str | None = Field(default=None, max_length=MAX_COMMENT_CHARS)

    @field_validator("value")
    @classmethod
    def _plus_or_minus_one(cls, value: int) -> int:
        if value not in (1, -1):
            raise PydanticCustomError("feedback_value", "value must be 1 or -1")
        return value


class FeedbackResult(BaseModel):
    question_id: PublicId
    value: int


class Health(BaseModel):
    status: Literal["ok", "unavailable"]
    database: bool
