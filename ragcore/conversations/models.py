"""The records of a conversation: a cited source as a turn keeps it, a turn, a resolution, a conversation.

Frozen, like the core records: a turn is what was asked and shown at that moment. A `Citation`
keeps the database keys of its chunk and document for the code (the readability check, versions);
`as_dict` — what the API returns and the exports print — names the document by its public id only.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from ragcore.core import LOCATOR_PAGE, version_label

METHOD_NONE = "none"  # the question was taken as typed
METHOD_RULES = "rules"  # rewritten by the deterministic follow-up rules
METHOD_LLM = "llm"  # rewritten by the language model's condensation call
METHODS = (METHOD_NONE, METHOD_RULES, METHOD_LLM)

UNDERSTOOD = "Şöyle anladım: "  # the line shown above an answer to a rewritten question
# What a reopened turn shows instead of an answer drawn from a document its reader may no longer read.
HIDDEN_ANSWER = ("Bu cevabın dayandığı belgelerden birini artık okuyamıyorsunuz (belge silinmiş ya da rolünüz "
                 "değişmiş); cevap ve o belgenin kaynağı gösterilmiyor. Soruyu yeniden sorarak güncel cevabı "
                 "alabilirsiniz.")


class ConversationError(ValueError):
    """A conversation action was refused; the message is Turkish and safe to show."""


class ConversationNotFound(ConversationError):
    """No such conversation, or somebody else's: the two are deliberately not told apart."""

    def __init__(self) -> None:
        super().__init__("Sohbet bulunamadı ya da size ait değil.")


@dataclass(frozen=True)
class DocumentVersion:
    """Which version of a document an answer came from (migration 024): its number, its file's
    sha256 and its upload date. Answers stored before documents had versions have no number."""

    sha256: str
    uploaded_at: datetime | None = None
    number: int | None = None

    @property
    def label(self) -> str:
        """"sürüm 2 · 06.12.2026"; for an answer stored before versions, "sha256 3f2a9c1e4b7d · 05.01.2026"."""
        if self.number is not None:
            return version_label(self.number, self.uploaded_at)
        day = f" · {self.uploaded_at:%d.%m.%Y}" if self.uploaded_at else ""
        return f"sha256 {self.sha256[:12]}{day}"

    def as_dict(self) -> dict:
        return {"sha256": self.sha256, "uploaded_at": self.uploaded_at.isoformat() if self.uploaded_at else None,
                "number": self.number}


@dataclass(frozen=True)
class Citation:
    """A source the answer cited as [number]: its document, article and place, as shown then.

    `heading` is the article's title ("Analık halinde çalışma ve süt izni"; "" when unknown);
    `chunk_id` and `document_key` are database keys, for the code only."""

    number: int
    document_id: str  # the document's public id
    title: str
    article: str | None = None
    heading: str = ""
    page_start: int = 0
    page_end: int = 0
    locator: str = ""  # "s. 7", "s. 7–8" or a Word file's "§ BİRİNCİ BÖLÜM · paragraf 2"
    locator_kind: str = LOCATOR_PAGE
    filename: str = ""
    version: DocumentVersion | None = None
    chunk_id: int | None = None
    document_key: int | None = None

    @property
    def article_label(self) -> str:
        """"Madde 74 – Analık halinde çalışma ve süt izni", the label alone, the heading alone, or ""."""
        return " – ".join(part for part in (self.article or "", self.heading) if part)

    def as_dict(self) -> dict:
        return {"number": self.number, "document_id": self.document_id, "title": self.title, "article": self.article,
                "heading": self.heading, "page_start": self.page_start, "page_end": self.page_end,
                "locator": self.locator, "locator_kind": self.locator_kind, "filename": self.filename,
                "version": self.version.as_dict() if self.version else None}


@dataclass(frozen=True)
class Turn:
    """One question of a conversation and what it was answered.

    `question` is as typed, `resolved_question` what was searched and answered; `citations` the
    sources the answer cited. `hidden`: read back for a user who may no longer read one of its
    cited documents, so `answer_text` is `HIDDEN_ANSWER` and that citation is gone."""

    question: str
    resolved_question: str
    answer_text: str = ""
    outcome: str | None = None
    citations: tuple[Citation, ...] = ()
    method: str = METHOD_NONE
    status: str = "answered"
    position: int = 0  # 1-based within its conversation; 0 for a turn not stored
    question_id: str | None = None  # the questions log row's public id (feedback goes by it)
    created_at: datetime | None = None
    hidden: bool = False

    @property
    def rewritten(self) -> bool:
        return self.method != METHOD_NONE

    @property
    def shown(self) -> str | None:
        """The "Şöyle anladım: …" line of a rewritten question, None otherwise."""
        return UNDERSTOOD + self.resolved_question if self.rewritten else None


@dataclass(frozen=True)
class Resolution:
    """A question as it will be searched: `question` stands alone. `rewritten` iff `method` is not
    "none"; `shown` is the line to show above the answer ("Şöyle anladım: …"), None when not
    rewritten. `notice`: a Turkish sentence when the language model could not condense the
    question and the rules did instead."""

    question: str
    rewritten: bool = False
    method: str = METHOD_NONE
    shown: str | None = None
    notice: str | None = None

    @classmethod
    def as_typed(cls, question: str) -> Resolution:
        return cls(question)

    @classmethod
    def rewritten_by(cls, method: str, question: str, notice: str | None = None) -> Resolution:
        return cls(question, True, method, UNDERSTOOD + question, notice)


@dataclass(frozen=True)
class Conversation:
    """A saved conversation as its owner lists it: `id` is its public id."""

    id: str
    title: str
    created_at: datetime
    updated_at: datetime
    turn_count: int = 0
    turns: tuple[Turn, ...] = field(default=(), compare=False)  # filled when opened, empty in a list
