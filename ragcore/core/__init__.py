"""Foundations every other part stands on: settings, the records that cross modules, Turkish
text handling, formatting, private files, free disk space, secrets, public ids and the Ollama probe. Imports nothing of ragcore.
"""

from ragcore.core.config import (
    ANSWER_POLICIES,
    ROLE_LABELS,
    ROLES,
    SETTINGS_DOC,
    Settings,
    SettingsError,
    shown_in_turkish,
)
from ragcore.core.disk import DiskSpace, disk_space
from ragcore.core.files import PRIVATE_DIR as PRIVATE_DIR_MODE
from ragcore.core.files import (
    close_data_dir,
    create_private,
    private_dir,
    secure_data_dir,
    sha256_bytes,
    sha256_file,
)
from ragcore.core.formatting import count_of
from ragcore.core.formatting import date as format_date
from ragcore.core.formatting import date_time as format_date_time
from ragcore.core.formatting import duration as format_duration
from ragcore.core.formatting import integer as format_integer
from ragcore.core.formatting import megabytes as format_megabytes
from ragcore.core.formatting import milliseconds as format_milliseconds
from ragcore.core.formatting import number as format_number
from ragcore.core.formatting import percent as format_percent
from ragcore.core.models import (
    ADMIN_ROLE,
    CLOSEST_LEAD,
    FALLBACK_ANSWER,
    LOCATOR_PAGE,
    LOCATOR_ROWS,
    LOCATOR_SECTION,
    LOCATOR_SLIDE,
    OUTCOME_ANSWER,
    OUTCOME_CLOSEST,
    OUTCOME_REFUSED,
    OUTCOMES,
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
    reader_key,
    reader_members,
    version_label,
)
from ragcore.core.ollama import OllamaStatus
from ragcore.core.ollama import probe as probe_ollama
from ragcore.core.public_ids import parse_public_id, short_id
from ragcore.core.secrets import SecretError, cookie_key, initial_admin_password, initial_admin_password_path
from ragcore.core.text import (
    PREFIX_LENGTH,
    STOPWORDS,
    TOKENIZERS,
    ascii_typed_words,
    fold_ascii,
    get_tokenizer,
    lexical_tokens,
    normalize,
    prefix_tokens,
    reflow,
    respell_word_prefixes,
    sanitize,
    turkish_lower,
    typed_words,
    words,
)

__all__ = [
    # config: One typed settings object, read from the environment
    "ANSWER_POLICIES",
    "ROLE_LABELS",
    "ROLES",
    "Settings",
    "shown_in_turkish",
    "SETTINGS_DOC",
    "SettingsError",
    # disk: Free disk space where Dayanak writes
    "disk_space",
    "DiskSpace",
    # files: Private files and folders
    "close_data_dir",
    "create_private",
    "private_dir",
    "PRIVATE_DIR_MODE",
    "secure_data_dir",
    "sha256_bytes",
    "sha256_file",
    # formatting: numbers, durations and dates the way a Turkish reader writes them
    "count_of",
    "format_date",
    "format_date_time",
    "format_duration",
    "format_integer",
    "format_megabytes",
    "format_milliseconds",
    "format_number",
    "format_percent",
    # models: Records that cross module boundaries
    "ADMIN_ROLE",
    "Answer",
    "BackendChoice",
    "Chunk",
    "CLOSEST_LEAD",
    "Document",
    "FALLBACK_ANSWER",
    "LOCATOR_PAGE",
    "LOCATOR_ROWS",
    "LOCATOR_SECTION",
    "LOCATOR_SLIDE",
    "OUTCOME_ANSWER",
    "OUTCOME_CLOSEST",
    "OUTCOME_REFUSED",
    "OUTCOMES",
    "Page",
    "reader_key",
    "reader_members",
    "Source",
    "STATUS_ANSWERED",
    "STATUS_ERROR",
    "STATUS_FALLBACK",
    "STATUS_NEEDS_REVIEW",
    "User",
    "version_label",
    # ollama: is the Ollama server up, and which models does it have
    "OllamaStatus",
    "probe_ollama",
    # public_ids: The ids users see and send
    "parse_public_id",
    "short_id",
    # secrets: Secrets that have no defaults
    "cookie_key",
    "initial_admin_password",
    "initial_admin_password_path",
    "SecretError",
    # text: Turkish text handling shared by ingestion
    "ascii_typed_words",
    "fold_ascii",
    "get_tokenizer",
    "lexical_tokens",
    "normalize",
    "PREFIX_LENGTH",
    "prefix_tokens",
    "reflow",
    "respell_word_prefixes",
    "sanitize",
    "STOPWORDS",
    "TOKENIZERS",
    "turkish_lower",
    "typed_words",
    "words",
]
