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


# ----------------------------------------------------------------------------- chat


class ChatRequest(_Request):
    question: str = Field(description="Türkçe soru / the question (1 … MAX_QUESTION_CHARS characters)",
                          examples=["İşveren risk değerlendirmesi yapmakla yükümlü müdür?"])


class SourceOut(BaseModel):
    rank: int = Field(description="the [n] the answer cites")
    document_id: PublicId
    title: str
    filename: str
    page_start: int = Field(description="first page; for a Word file (locator_kind `section`), its section number")
    page_end: int
    page_label: str = Field(description='where the passage is, as cited: "s. 7", "s. 7–8", or for a Word file '
                                        '"§ BİRİNCİ BÖLÜM · paragraf 2" (the same as `locator`)')
    article: str | None
    locator_kind: Literal["page", "section"] = Field(
        description='"page": a PDF, cited by pages; "section": a Word file (no pages), cited by heading and paragraph')
    locator: str = Field(description='where the citation points: "s. 7" or "§ BİRİNCİ BÖLÜM · paragraf 2"')
    score: float
    text: str
    ocr: bool = Field(description="the passage was read by OCR from a scanned page: check it on the page itself")

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

    @classmethod
    def of(cls, answer: Answer) -> ChatAnswer:
        return cls(
            question=answer.question, text=answer.text, status=answer.status, outcome=answer.outcome,
            generator=answer.generator,
            llm_called=answer.llm_called, cited=list(answer.cited), sources=[SourceOut.of(s) for s in answer.sources],
            nearest_sentences=list(answer.nearest), question_id=answer.question_id, notice=answer.notice,
            timings=Timings(retrieval_ms=answer.retrieval_ms, first_token_ms=answer.first_token_ms,
                            total_ms=answer.total_ms),
        )


class ChatDone(ChatAnswer):
    """The last server-sent event (`event: done`)."""

    replaced: bool = Field(description="true when `text` differs from the streamed pieces (a refusal or an "
                                       "unreliable model answer was replaced): show `text`, not the pieces")


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
    file_format: Literal["pdf", "docx"] = Field(description="told by the file's content; a docx's `pages` counts "
                                                            "its sections (it has no pages)")
    ocr_pages: list[int] = Field(description="pages whose text was read by OCR (scanned, no text layer)")
    oversized_pages: list[int] = Field(default_factory=list, description="pages too large for the pixel budget "
                                       "(RENDER_MAX_MEGAPIXELS) at the page image's resolution: drawn smaller")
    undrawable_pages: list[int] = Field(default_factory=list, description="pages too large to draw as an image "
                                        "even at PAGE_IMAGE_MIN_DPI: their page image answers 422 page_too_large")

    @classmethod
    def of(cls, doc: Document) -> DocumentOut:
        return cls(id=doc.public_id, title=doc.title, filename=doc.filename, pages=doc.page_count, chunks=doc.chunk_count,
                   size_bytes=doc.size_bytes, allowed_roles=list(doc.allowed_roles), uploaded_by=doc.uploaded_by,
                   created_at=doc.created_at, skipped_pages=list(doc.skipped_pages), file_format=doc.file_format,
                   ocr_pages=list(doc.ocr_pages), oversized_pages=list(doc.oversized_pages),
                   undrawable_pages=list(doc.undrawable_pages))


class ChunkOut(BaseModel):
    ordinal: int
    page_start: int
    page_end: int
    article: str | None
    locator: str | None = Field(default=None, description="a Word file's section label; null for a PDF")
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
