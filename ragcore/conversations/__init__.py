"""Conversations: follow-up questions resolved from what came before, saved per user, exported as a file.

Resolving a follow-up (`resolve_follow_up`: the deterministic rules, or one condensation call to a
language model), the turns a user may still read (`readable_history`), the saved conversations
(migration 020: ask in one, list, open, rename, delete), their export as Markdown or PDF, and the
retention that deletes old ones (`expire_conversations`, run by the jobs package's
expire_conversations job). The answer itself is the answer service's: a conversation only changes
which question it is asked.
"""

from ragcore.conversations.citations import readable_history, turn_of
from ragcore.conversations.export import FORMATS, MARKDOWN, PDF, ExportError, ExportFile
from ragcore.conversations.models import (
    HIDDEN_ANSWER,
    METHOD_LLM,
    METHOD_NONE,
    METHOD_RULES,
    UNDERSTOOD,
    Citation,
    Conversation,
    ConversationError,
    ConversationNotFound,
    DocumentVersion,
    Resolution,
    Turn,
)
from ragcore.conversations.resolver import CONDENSE_FAILED, resolve_follow_up
from ragcore.conversations.rules import is_follow_up
from ragcore.conversations.service import (
    LIST_LIMIT,
    MAX_LIST_LIMIT,
    MAX_TITLE_CHARS,
    AccountInactive,
    ConversationFull,
    InvalidTitle,
    PreparedTurn,
    ask_in_conversation,
    condenser,
    delete_conversation,
    expire_conversations,
    expired_conversations,
    export_conversation,
    get_conversation,
    list_conversations,
    prepare_turn,
    record_turn,
    rename_conversation,
)

__all__ = [
    "CONDENSE_FAILED",
    "FORMATS",
    "HIDDEN_ANSWER",
    "LIST_LIMIT",
    "MARKDOWN",
    "MAX_LIST_LIMIT",
    "MAX_TITLE_CHARS",
    "METHOD_LLM",
    "METHOD_NONE",
    "METHOD_RULES",
    "PDF",
    "UNDERSTOOD",
    "AccountInactive",
    "Citation",
    "Conversation",
    "ConversationError",
    "ConversationFull",
    "ConversationNotFound",
    "DocumentVersion",
    "ExportError",
    "ExportFile",
    "InvalidTitle",
    "PreparedTurn",
    "Resolution",
    "Turn",
    "ask_in_conversation",
    "condenser",
    "delete_conversation",
    "expire_conversations",
    "expired_conversations",
    "export_conversation",
    "get_conversation",
    "is_follow_up",
    "list_conversations",
    "prepare_turn",
    "readable_history",
    "record_turn",
    "rename_conversation",
    "resolve_follow_up",
    "turn_of",
]
