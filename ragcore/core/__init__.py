"""Foundations every other part stands on: settings, the records that cross modules, Turkish
text handling, formatting, private files, secrets and the Ollama probe. Imports nothing of ragcore.
"""

from ragcore.core import files, formatting, ollama
from ragcore.core.config import (
    ROLE_LABELS,
    ROLES,
    SETTINGS_DOC,
    Settings,
    SettingsError,
)
from ragcore.core.files import (
    create_private,
    private_dir,
    secure_data_dir,
    sha256_bytes,
    sha256_file,
)
from ragcore.core.models import (
    FALLBACK_ANSWER,
    STATUS_ANSWERED,
    STATUS_ERROR,
    STATUS_FALLBACK,
    STATUS_NEEDS_REVIEW,
    Answer,
    BackendChoice,
    Chunk,
    Document,
    Page,
    Source,
    User,
)
from ragcore.core.ollama import (
    OllamaStatus,
    probe,
)
from ragcore.core.secrets import (
    SecretError,
    cookie_key,
    initial_admin_password,
    initial_admin_password_path,
)
from ragcore.core.text import (
    PREFIX_LENGTH,
    STOPWORDS,
    TOKENIZERS,
    get_tokenizer,
    lexical_tokens,
    normalize,
    prefix_tokens,
    reflow,
    sanitize,
    turkish_lower,
    words,
)

__all__ = [
    "Answer",
    "BackendChoice",
    "Chunk",
    "Document",
    "FALLBACK_ANSWER",
    "OllamaStatus",
    "PREFIX_LENGTH",
    "Page",
    "ROLES",
    "ROLE_LABELS",
    "SETTINGS_DOC",
    "STATUS_ANSWERED",
    "STATUS_ERROR",
    "STATUS_FALLBACK",
    "STATUS_NEEDS_REVIEW",
    "STOPWORDS",
    "SecretError",
    "Settings",
    "SettingsError",
    "Source",
    "TOKENIZERS",
    "User",
    "cookie_key",
    "create_private",
    "files",
    "formatting",
    "get_tokenizer",
    "initial_admin_password",
    "initial_admin_password_path",
    "lexical_tokens",
    "normalize",
    "ollama",
    "prefix_tokens",
    "private_dir",
    "probe",
    "reflow",
    "sanitize",
    "secure_data_dir",
    "sha256_bytes",
    "sha256_file",
    "turkish_lower",
    "words",
]
