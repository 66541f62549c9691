"""What the product does with conversations: ask in one, list, open, rename, delete, export, expire.

Asking in a conversation is three steps, so that the chat page can stream the answer in between:
`prepare_turn` (check the question and the conversation, read its history as the user may read it
now, resolve the follow-up), the answer service's own `ask` or `stream` on the resolved question —
retrieval, the gate, the permissions and the questions log work exactly as for a typed question
— and `record_turn` (store the turn, making the conversation with its first one).
`ask_in_conversation` does the three at once (the API, the lab).

Every function takes the user and reads them again from the database: a deactivated account gets
nothing, and what a reopened conversation shows depends on the role the user has now. A
conversation is only ever its owner's (`ragcore.conversations.store`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ragcore.access import get_user
from ragcore.answer import AnswerService, validate_question
from ragcore.conversations import export, store
from ragcore.conversations.citations import readable_history, turn_of
from ragcore.conversations.models import (
    Conversation,
    ConversationError,
    ConversationNotFound,
    Resolution,
    Turn,
)
from ragcore.conversations.resolver import is_language_model, resolve_follow_up
from ragcore.core import Answer, Settings, User, parse_public_id, sanitize
from ragcore.store import Database

MAX_TITLE_CHARS = 120  # the same bound as migration 020's CHECK
LIST_LIMIT = 50  # conversations a list shows by default
MAX_LIST_LIMIT = 200
HISTORY_TURNS = 6  # turns read back to resolve a follow-up (the rules' chain and the model's prompt)
ACCOUNT_GONE = "Hesabınız bulunamadı ya da devre dışı; sohbetlerinize erişilemiyor."


class AccountInactive(ConversationError):
    def __init__(self) -> None:
        super().__init__(ACCOUNT_GONE)


class InvalidTitle(ConversationError):
    """A name the conversation cannot have (empty, too long)."""


class ConversationFull(ConversationError):
    def __init__(self, limit: int) -> None:
        super().__init__(f"Bu sohbet en fazla {limit} soru tutabilir (CONVERSATION_MAX_TURNS). Sorunuzu yeni bir "
                         "sohbette sorun; bu sohbet kayıtlı kalır, açıp okuyabilirsiniz.")


@dataclass(frozen=True)
class PreparedTurn:
    """A question checked and resolved, waiting for its answer. `conversation_id` None: the turn
    starts a new conversation when it is recorded."""

    conversation_id: str | None
    question: str  # as typed (validated)
    resolution: Resolution


def condenser(service: AnswerService) -> object | None:
    """The service's generator when it is a language model (it condenses follow-ups), else None
    (the rules do): what the chat page and the API pass as `generator`."""
    return service.generator if is_language_model(service.generator) else None


# ----------------------------------------------------------------------------- asking


def prepare_turn(service: AnswerService, user: User, conversation_id: str | None, question: str, *,
                 generator: object = None) -> PreparedTurn:
    """Check the question (`QuestionError`) and the conversation (`ConversationNotFound` for a
    missing one and for somebody else's alike, `ConversationFull`), then resolve the follow-up
    from the history the user may read now."""
    settings = service.settings
    text = validate_question(question, settings.max_question_chars)
    current = _current(service.db, user)
    if conversation_id is None:
        return PreparedTurn(None, text, Resolution.as_typed(text))
    key, conversation = _owned(service.db, settings, current, conversation_id)
    if conversation.turn_count >= settings.conversation_max_turns:
        raise ConversationFull(settings.conversation_max_turns)
    history = readable_history(service.db, current.role, store.turns(service.db, key, HISTORY_TURNS))
    resolution = resolve_follow_up(history, text, generator=generator, settings=settings)
    return PreparedTurn(conversation.id, text, resolution)


def record_turn(service: AnswerService, user: User, prepared: PreparedTurn, answer: Answer) -> tuple[Conversation, Turn]:
    """Store the answered turn (after `ask`, or once a `stream` is exhausted); a new conversation,
    titled by the question, when `prepared` has none. Returns the conversation and the stored turn."""
    settings = service.settings
    turn = turn_of(service.db, prepared.question, prepared.resolution, answer)
    with service.db.connection() as conn:
        if prepared.conversation_id is None:
            key, conversation = store.create(conn, user.username, title_of(prepared.question))
        else:
            found = store.lock(conn, user.username, prepared.conversation_id, settings.conversation_retention_days)
            if found is None:  # deleted (or expired) while the question was answered
                raise ConversationNotFound()
            key, conversation = found
            if conversation.turn_count >= settings.conversation_max_turns:
                raise ConversationFull(settings.conversation_max_turns)
        stored = store.insert_turn(conn, key, conversation.turn_count + 1, turn, user.username)
    return replace(conversation, turn_count=stored.position, updated_at=stored.created_at), stored


def ask_in_conversation(service: AnswerService, user: User, conversation_id: str | None, question: str, *,
                        generator: object = None) -> tuple[Conversation, Turn, Answer]:
    """Resolve, answer and store one question (`conversation_id` None: a new conversation)."""
    prepared = prepare_turn(service, user, conversation_id, question, generator=generator)
    answer = service.ask(user, prepared.resolution.question)
    conversation, turn = record_turn(service, user, prepared, answer)
    return conversation, turn, answer


# ----------------------------------------------------------------------------- the owner's conversations


def list_conversations(db: Database, settings: Settings, user: User, *, limit: int = LIST_LIMIT) -> list[Conversation]:
    """The user's conversations, most recently used first (at most `limit`, up to MAX_LIST_LIMIT)."""
    current = _current(db, user)
    bounded = max(1, min(int(limit), MAX_LIST_LIMIT))
    return store.newest(db, current.username, settings.conversation_retention_days, bounded)


def get_conversation(db: Database, settings: Settings, user: User, conversation_id: str) -> Conversation:
    """One of the user's conversations with every turn, as the user may read it now
    (`readable_history`: answers from documents the role can no longer read are hidden)."""
    current = _current(db, user)
    key, conversation = _owned(db, settings, current, conversation_id)
    turns = store.turns(db, key, settings.conversation_max_turns)
    return replace(conversation, turns=tuple(readable_history(db, current.role, turns)))


def rename_conversation(db: Database, settings: Settings, user: User, conversation_id: str, title: str) -> Conversation:
    """Give the conversation a name of the user's (InvalidTitle for an empty or too long one)."""
    current = _current(db, user)
    cleaned = _checked_title(title)
    wanted = parse_public_id(conversation_id)
    renamed = store.rename(db, current.username, wanted, cleaned, settings.conversation_retention_days) if wanted else None
    if renamed is None:
        raise ConversationNotFound()
    return renamed


def delete_conversation(db: Database, user: User, conversation_id: str) -> None:
    """Delete the conversation and its turns (the questions log keeps its rows, as for every question)."""
    current = _current(db, user)
    wanted = parse_public_id(conversation_id)
    if wanted is None or not store.delete(db, current.username, wanted):
        raise ConversationNotFound()


def export_conversation(db: Database, settings: Settings, user: User, conversation_id: str,
                        fmt: str) -> export.ExportFile:
    """The conversation as the user may read it now, as a Markdown ("md") or PDF ("pdf") file."""
    if fmt not in export.FORMATS:
        raise export.ExportError(f"Bilinmeyen dışa aktarma biçimi: {fmt}. Geçerli biçimler: "
                                 f"{', '.join(export.FORMATS)}.")
    return export.export_file(get_conversation(db, settings, user, conversation_id), fmt)


def expired_conversations(db: Database, settings: Settings) -> bool:
    """Whether any conversation is past CONVERSATION_RETENTION_DAYS (then the job has work)."""
    return store.any_expired(db, settings.conversation_retention_days)


def expire_conversations(db: Database, settings: Settings) -> int:
    """Delete every conversation untouched for CONVERSATION_RETENTION_DAYS; how many went (the job's work)."""
    return store.delete_expired(db, settings.conversation_retention_days)


# ----------------------------------------------------------------------------- helpers


def title_of(question: str) -> str:
    """A new conversation's title: its first question on one line, cut at a word to MAX_TITLE_CHARS."""
    text = " ".join(sanitize(question, single_line=True).split())
    if len(text) <= MAX_TITLE_CHARS:
        return text or "Sohbet"
    cut = text[:MAX_TITLE_CHARS - 1]
    return (cut.rsplit(" ", 1)[0] if " " in cut[MAX_TITLE_CHARS // 2:] else cut).rstrip(" ,.;:") + "…"


def _checked_title(title: str) -> str:
    text = " ".join(sanitize(title or "", single_line=True).split())
    if not text:
        raise InvalidTitle("Sohbet adı boş olamaz; bir ad yazın.")
    if len(text) > MAX_TITLE_CHARS:
        raise InvalidTitle(f"Sohbet adı en fazla {MAX_TITLE_CHARS} karakter olabilir (şu an {len(text)}); "
                                "lütfen kısaltın.")
    return text


def _current(db: Database, user: User) -> User:
    current = get_user(db, user.username)
    if current is None or not current.active:
        raise AccountInactive()
    return current


def _owned(db: Database, settings: Settings, user: User, conversation_id: str) -> tuple[int, Conversation]:
    """The user's own conversation; ConversationNotFound for a missing one, somebody else's, an
    expired one and text that is no id, all alike."""
    wanted = parse_public_id(conversation_id)
    found = store.find(db, user.username, wanted, settings.conversation_retention_days) if wanted else None
    if found is None:
        raise ConversationNotFound()
    return found
