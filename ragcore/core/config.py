"""One typed settings object, read from the environment (and an optional `.env`) once.

Every module takes a `Settings` argument instead of reading the environment itself, so
tests can build isolated settings and nothing changes behind a running process.
"""

from __future__ import annotations

import ipaddress
import os
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

from dotenv import dotenv_values

# The roles a fresh installation starts with (migration 021 seeds them, with "denetci", the
# auditor). Roles are data now (ragcore.access.roles is the source of truth); these names are
# the defaults the test worlds, the lab and the benchmarks build with.
ROLES: tuple[str, ...] = ("admin", "isg", "ik", "uretim", "personel")
ROLE_LABELS: dict[str, str] = {
    "admin": "Yönetici",
    "isg": "İş sağlığı ve güvenliği",
    "ik": "İnsan kaynakları",
    "uretim": "Üretim",
    "personel": "Tüm personel",
}

EMBED_BACKENDS = ("auto", "e5", "ollama", "use")
LLM_BACKENDS = ("auto", "ollama", "openai", "extractive")
RETRIEVAL_MODES = ("auto", "rrf", "weighted", "dense", "lexical")
# How an answer is chosen: the rules (the evidence gate, the sentence quoter and its quote check)
# or the reader (ragcore.reader: a cross-encoder reads the candidates). The rules stay the default
# while the reader loses to them on the everyday questions (docs/reader.md, "Measured").
ANSWER_POLICIES = ("rules", "reader")
MAX_READER_CANDIDATES = 50
# A language model's answer: bounds an operator may choose between (LLM_MAX_TOKENS, LLM_ANSWER_SECONDS).
MAX_TOKENS_RANGE = (16, 8192)
ANSWER_SECONDS_RANGE = (1.0, 3600.0)
MAX_XML_DEPTH = 256  # libxml2's own nesting limit without XML_PARSE_HUGE (lxml's huge_tree)


class SettingsError(ValueError):
    """A setting has a value that cannot be used; the message names the variable."""


# name -> (default, one-line description). The README documents each; a test checks that.
SETTINGS_DOC: dict[str, tuple[str, str]] = {
    "DATABASE_URL": ("(unset)", "PostgreSQL URL; unset starts the embedded server under DATA_DIR"),
    "DATABASE_READ_URL": ("(unset)", "read replica for retrieval (answers, search); unset: DATABASE_URL serves it"),
    "DATA_DIR": ("./data", "embedded database, stored uploads, secrets, caches"),
    "MIN_FREE_DISK_MB": ("1024", "uploads are refused while DATA_DIR (or the embedded database's folder) has less free space; 0 turns the check off"),
    "BACKUP_SECONDS": ("3600", "longest a backup's pg_dump or a restore's pg_restore may run (`python -m ragcore backup`)"),
    "OLLAMA_BASE_URL": ("http://127.0.0.1:11434", "Ollama server for embeddings and answers"),
    "EMBED_BACKEND": ("auto", "auto | e5 (embedded multilingual-e5-small) | ollama | use (embedded USE, small machines)"),
    "EMBED_MODEL": ("bge-m3", "Ollama embedding model"),
    "EMBED_QUERY_PREFIX": ("(model default)", "Ollama only: text put before every question; `none` for no prefix"),
    "EMBED_PASSAGE_PREFIX": ("(model default)", "Ollama only: text put before every chunk; changes the index name"),
    "LLM_BACKEND": ("auto", "auto | ollama | openai | extractive"),
    "LLM_MODEL": ("qwen2.5:7b-instruct", "chat model for Ollama or the OpenAI-compatible server"),
    "OPENAI_BASE_URL": ("(unset)", "OpenAI-compatible server, e.g. http://127.0.0.1:8080/v1"),
    "OPENAI_API_KEY": ("(unset)", "API key for the OpenAI-compatible server, if it needs one"),
    "LLM_MAX_TOKENS": ("512", "most tokens a language model may generate per answer (Ollama num_predict, OpenAI max_tokens; 16-8192); an answer that reaches it is replaced by quotes"),
    "LLM_ANSWER_SECONDS": ("60", "wall-clock limit of one language-model answer, first token included (1-3600 s); an answer cut there is replaced by quotes"),
    "CHUNK_SIZE": ("1000", "target chunk size in characters"),
    "CHUNK_OVERLAP": ("150", "overlap between prose chunks in characters"),
    "PROGRESS_LINE_SECONDS": ("10", "seconds between the progress lines `python -m ragcore ingest` and `reembed` print when their output is not a terminal (a log, a pipe); on a terminal a progress bar is drawn instead"),
    "RENDER_MAX_MEGAPIXELS": ("20", "largest drawing of a PDF page (page image, OCR), width × height at the chosen dpi in millions of pixels; a larger page is drawn at a lower dpi (an A3 page at 300 dpi is 17.4)"),
    "PAGE_IMAGE_MIN_DPI": ("50", "lowest dpi a page image (the cited-page dialog, the API's page image) is lowered to; a page too large for RENDER_MAX_MEGAPIXELS even there is refused with a message"),
    "OCR_MIN_DPI": ("150", "lowest dpi a scanned page is drawn at for OCR; a page too large for RENDER_MAX_MEGAPIXELS even there is not read (listed among the pages without text)"),
    "OCR_MAX_PAGES": ("500", "most pages without a text layer one PDF may have read by OCR; more refuse the upload before any is read"),
    "OCR_PAGE_SECONDS": ("60", "seconds Tesseract may take on one page; a page that takes longer fails the upload, naming the page"),
    "TOP_K": ("5", "sources passed to the answer"),
    "RETRIEVAL_MODE": ("auto", "auto | rrf | weighted | dense | lexical"),
    "DENSE_WINDOWS": ("true", "dense leg scores a chunk by the mean of its vector's cosine and its best sentence window's; a new index (first start, reembed) is built with windows when on, and uploads follow the index"),
    "REFUSAL_THRESHOLD": ("(calibrated)", "override the calibrated evidence threshold (with ANSWER_POLICY=reader: the reader's one cut)"),
    "ANSWER_POLICY": ("rules", "rules (evidence gate, sentence quoter, quote check) | reader (the cross-encoder in ragcore/reader; see docs/reader.md)"),
    "READER_CANDIDATES": ("12", "ANSWER_POLICY=reader: retrieved chunks the reader reads per question (1-50)"),
    "MAX_UPLOAD_MB": ("50", "largest PDF accepted for upload"),
    "DOCX_MAX_UNPACKED_MB": ("256", "a .docx (and a .xlsx or .pptx) may unpack to at most this many MB (all its parts); refused before any XML is read"),
    "DOCX_MAX_ELEMENTS": ("3000000", "XML elements (attributes, namespace declarations and comments count too) in all parts of a .docx (and a .xlsx or .pptx); counted while streaming, before any tree is built"),
    "DOCX_MAX_PARAGRAPHS": ("200000", "paragraphs (w:p, table cells' and headers' too) in a .docx"),
    "DOCX_MAX_DEPTH": ("100", "nesting depth of a .docx's (and a .xlsx's or .pptx's) XML (10-256; Office writes a few dozen levels at most)"),
    "DOCX_MAX_CHARACTERS": ("10000000", "characters of text read from a .docx (numbering and merged table cells included), a .xlsx (its header row repeated in each chunk included) or a .pptx"),
    "XLSX_MAX_ROWS": ("100000", "rows of a .xlsx, all sheets together (hidden ones too); counted in the XML before openpyxl reads it, and again while reading (empty rows between rows included)"),
    "XLSX_MAX_CELLS": ("1000000", "cells of a .xlsx, all sheets together (hidden ones too), and at most as many shared strings; counted in the XML before openpyxl reads it, and again while reading (empty cells padded into a row included)"),
    "PPTX_MAX_SLIDES": ("1000", "slides of a .pptx; counted from the package's directory before python-pptx reads it"),
    "MAX_QUESTION_CHARS": ("1000", "longest question accepted"),
    "CONVERSATION_RETENTION_DAYS": ("180", "saved conversations untouched this many days are deleted (the expire_conversations job)"),
    "CONVERSATION_MAX_TURNS": ("200", "questions one saved conversation holds; then the user starts a new one"),
    "AUDIT_RETENTION_DAYS": ("365", "rows of the questions log (the audit trail) older than this many days are deleted by the expire_audit job; 0 keeps them forever"),
    "AUDIT_EXPORT_MAX_ROWS": ("100000", "most rows one CSV export of the audit trail holds; narrow the filters for more"),
    "COOKIE_KEY": ("(generated)", "login cookie signing key; generated into DATA_DIR if unset"),
    "ADMIN_PASSWORD": ("(generated)", "first admin password; generated and printed once if unset"),
    "TQUAD_DIR": ("../shared/data/tquad", "TQuAD v0.1 train/dev JSON files"),
    "DOCUMENTS_DIR": ("../shared/data/documents", "sample law PDFs"),
    "LOGIN_SLEEP_TIME": ("0.7", "seconds the login form waits on each signed-out run (slows guessing)"),
    "LDAP_URL": ("(none)", "LDAP/Active Directory server, `ldaps://dc1.firma.local` (or `ldap://` with LDAP_START_TLS); unset: no directory sign-in"),
    "LDAP_START_TLS": ("false", "upgrade an `ldap://` connection with StartTLS before any password is sent"),
    "LDAP_ALLOW_PLAIN": ("false", "allow `ldap://` without TLS (passwords cross the network readable; logged and shown as a warning)"),
    "LDAP_CA_FILE": ("(system)", "PEM file of the CA that signed the directory's certificate (default: the system's CAs)"),
    "LDAP_BIND_DN": ("(anonymous)", "service account that searches for users and re-checks them (e.g. `CN=dayanak-svc,OU=Servis,DC=firma,DC=local`)"),
    "LDAP_BIND_PASSWORD": ("(none)", "password of LDAP_BIND_DN"),
    "LDAP_USER_BASE_DN": ("(none)", "where users are searched (required with LDAP_URL)"),
    "LDAP_USER_FILTER": ("(uid={username})", "filter that finds a user by the typed name; AD: `(sAMAccountName={username})`"),
    "LDAP_GROUP_BASE_DN": ("(LDAP_USER_BASE_DN)", "where groups (groupOfNames/group `member`) are searched"),
    "LDAP_DISABLED_GROUP": ("(none)", "members of this group (DN or cn) are refused, like a disabled account"),
    "LDAP_TIMEOUT_SECONDS": ("5", "connect and operation timeout of one directory request"),
    "LDAP_RECHECK_SECONDS": ("300", "a directory user's groups and account are re-read at most this long after the last check; removed users lose access at the next request after it (0: every request)"),
    "OIDC_ISSUER_URL": ("(none)", "OpenID Connect provider (its `/.well-known/openid-configuration` is read); unset: no 'Kurumsal hesapla giriş'"),
    "OIDC_CLIENT_ID": ("(none)", "client id registered at the provider"),
    "OIDC_CLIENT_SECRET": ("(none)", "client secret registered at the provider"),
    "OIDC_REDIRECT_URL": ("(none)", "the app's callback as registered at the provider, `https://dayanak.firma.local/oauth2callback`"),
    "OIDC_GROUPS_CLAIM": ("groups", "the ID-token claim that lists the user's groups"),
    "OIDC_USERNAME_CLAIM": ("preferred_username", "the claim that names the user (lowercased; must fit the username rules)"),
    "LOG_LEVEL": ("INFO", "Python log level"),
    "WORKER_IN_APP": ("true", "the app (`make run`) and the REST API (`make api`) each run a job worker inside them; false: only separate `python -m ragcore worker` processes run jobs"),
    "JOB_MODULES": ("eval.jobs", "comma-separated modules that register extra job kinds (the lab's); loaded by workers"),
    "JOB_HEARTBEAT_SECONDS": ("10", "worker heartbeat; a worker silent for 3× this long is taken for dead, its job failed"),
    "WATCH_DIR": ("(unset)", "a folder (a mounted share) whose documents are kept in Dayanak: new files ingested, changed ones new versions, removed ones retired"),
    "WATCH_INTERVAL_SECONDS": ("300", "how often a worker scans WATCH_DIR"),
    "WATCH_DEFAULT_ROLES": ("admin", "roles of a watched file whose folder has no rule file (.dayanak.toml)"),
    "WATCH_MAX_FILES": ("10000", "most files one scan of WATCH_DIR reads; more are reported and left for the admin"),
    "API_HOST": ("127.0.0.1", "address `python -m ragcore api` binds to (REST API)"),
    "API_PORT": ("8502", "port of the REST API"),
    "TRUSTED_PROXIES": ("(none)", "comma-separated proxy IPs/networks whose X-Forwarded-For names the client (throttles)"),
}


def _names(env: Mapping[str, str], name: str, default: tuple[str, ...]) -> tuple[str, ...]:
    raw = env.get(name)
    if raw is None:
        return default
    return tuple(part.strip() for part in raw.split(",") if part.strip())


def _int(env: Mapping[str, str], name: str, default: int, minimum: int = 0) -> int:
    raw = env.get(name, "").strip()
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError as exc:
        raise SettingsError(f"{name} must be an integer, got {raw!r}") from exc
    if value < minimum:
        raise SettingsError(f"{name} must be at least {minimum}, got {value}")
    return value


def _float_or_none(env: Mapping[str, str], name: str) -> float | None:
    raw = env.get(name, "").strip()
    if not raw:
        return None
    try:
        return float(raw)
    except ValueError as exc:
        raise SettingsError(f"{name} must be a number, got {raw!r}") from exc


def _nonnegative_float(env: Mapping[str, str], name: str, default: float) -> float:
    value = _float_or_none(env, name)
    if value is None:
        return default
    if value < 0:
        raise SettingsError(f"{name} must not be negative, got {value}")
    return value


def _bool(env: Mapping[str, str], name: str, default: bool) -> bool:
    raw = env.get(name, "").strip().lower()
    if not raw:
        return default
    if raw in ("1", "true", "yes", "on"):
        return True
    if raw in ("0", "false", "no", "off"):
        return False
    raise SettingsError(f"{name} must be true or false, got {raw!r}")


def _positive_float(env: Mapping[str, str], name: str, default: float) -> float:
    value = _float_or_none(env, name)
    if value is None:
        return default
    if value <= 0:
        raise SettingsError(f"{name} must be positive, got {value}")
    return value


def _bounded_int(env: Mapping[str, str], name: str, default: int, bounds: tuple[int, int]) -> int:
    value = _int(env, name, default, minimum=bounds[0])
    if value > bounds[1]:
        raise SettingsError(f"{name} must be at most {bounds[1]}, got {value}")
    return value


def _bounded_float(env: Mapping[str, str], name: str, default: float, bounds: tuple[float, float]) -> float:
    value = _float_or_none(env, name)
    if value is None:
        return default
    if not bounds[0] <= value <= bounds[1]:  # NaN fails this too
        raise SettingsError(f"{name} must be between {bounds[0]:g} and {bounds[1]:g}, got {value}")
    return value


def _port(env: Mapping[str, str], name: str, default: int) -> int:
    value = _int(env, name, default, minimum=1)
    if value > 65535:
        raise SettingsError(f"{name} must be a TCP port (1–65535), got {value}")
    return value


def _choice(env: Mapping[str, str], name: str, choices: tuple[str, ...], default: str) -> str:
    value = env.get(name, "").strip().lower() or default
    if value not in choices:
        raise SettingsError(f"{name} must be one of {', '.join(choices)}; got {value!r}")
    return value


def _prefix(env: Mapping[str, str], name: str) -> str | None:
    """An embedding prefix: unset or blank = the model's default, `none` = no prefix, else verbatim
    (not stripped: the trailing space of "search_query: " belongs to the prefix)."""
    raw = env.get(name)
    if raw is None or not raw.strip():
        return None
    return "" if raw.strip().lower() == "none" else raw


def _networks(env: Mapping[str, str], name: str) -> tuple[str, ...]:
    """Comma-separated IP addresses or CIDR networks, normalised (`10.0.0.5` → `10.0.0.5/32`).

    Parsed here with `ipaddress` so a typo stops the process with its name; uvicorn's own
    parser would quietly keep it as a literal host name that no peer ever matches.
    """
    networks = []
    for part in _names(env, name, ()):
        try:
            networks.append(str(ipaddress.ip_network(part, strict=False)))
        except ValueError as exc:
            raise SettingsError(f"{name} must list IP addresses or networks (e.g. 10.0.0.5, 10.0.0.0/24), "
                                f"got {part!r}") from exc
    return tuple(dict.fromkeys(networks))


def _docx_depth(env: Mapping[str, str]) -> int:
    """DOCX_MAX_DEPTH within 10-256: libxml2 itself stops at 256 levels without its huge-tree
    option (off everywhere here), so a larger cap would never be the one to refuse."""
    value = _int(env, "DOCX_MAX_DEPTH", 100, minimum=10)
    if value > MAX_XML_DEPTH:
        raise SettingsError(f"DOCX_MAX_DEPTH must be at most {MAX_XML_DEPTH}, got {value}")
    return value


def _optional_dir(env: Mapping[str, str], name: str) -> Path | None:
    value = _opt(env, name)
    return Path(value).expanduser() if value else None


def _ldap(env: Mapping[str, str]) -> dict[str, object]:
    """The directory settings, checked together: plain `ldap://` needs LDAP_START_TLS or an
    explicit LDAP_ALLOW_PLAIN, because the users' passwords travel in the bind."""
    url = _opt(env, "LDAP_URL")
    start_tls, allow_plain = _bool(env, "LDAP_START_TLS", False), _bool(env, "LDAP_ALLOW_PLAIN", False)
    user_filter = _opt(env, "LDAP_USER_FILTER") or "(uid={username})"
    base = _opt(env, "LDAP_USER_BASE_DN")
    ca_file = _opt(env, "LDAP_CA_FILE")
    if url is not None:
        if not url.lower().startswith(("ldap://", "ldaps://")):
            raise SettingsError(f"LDAP_URL must start with ldaps:// or ldap://, got {url!r}")
        if url.lower().startswith("ldap://") and not start_tls and not allow_plain:
            raise SettingsError("LDAP_URL is plain ldap://: use ldaps://, or set LDAP_START_TLS=true; "
                                "LDAP_ALLOW_PLAIN=true sends passwords readable and is for test networks only")
        if base is None:
            raise SettingsError("LDAP_USER_BASE_DN is required with LDAP_URL (where the users are searched)")
    if "{username}" not in user_filter or not (user_filter.startswith("(") and user_filter.endswith(")")):
        raise SettingsError(f"LDAP_USER_FILTER must be a parenthesised filter containing {{username}}, got {user_filter!r}")
    return {
        "ldap_url": url, "ldap_start_tls": start_tls, "ldap_allow_plain": allow_plain,
        "ldap_ca_file": Path(ca_file).expanduser() if ca_file else None,
        "ldap_bind_dn": _opt(env, "LDAP_BIND_DN"), "ldap_bind_password": _opt(env, "LDAP_BIND_PASSWORD"),
        "ldap_user_base_dn": base, "ldap_user_filter": user_filter,
        "ldap_group_base_dn": _opt(env, "LDAP_GROUP_BASE_DN"),
        "ldap_disabled_group": _opt(env, "LDAP_DISABLED_GROUP"),
        "ldap_timeout_seconds": _positive_float(env, "LDAP_TIMEOUT_SECONDS", 5.0),
        "ldap_recheck_seconds": _nonnegative_float(env, "LDAP_RECHECK_SECONDS", 300.0),
    }


_OIDC_REQUIRED = ("OIDC_ISSUER_URL", "OIDC_CLIENT_ID", "OIDC_CLIENT_SECRET", "OIDC_REDIRECT_URL")


def _oidc(env: Mapping[str, str]) -> dict[str, object]:
    """OpenID Connect settings: all four of `_OIDC_REQUIRED` or none (a half-set provider fails at start)."""
    values = {name: _opt(env, name) for name in _OIDC_REQUIRED}
    missing = [name for name, value in values.items() if value is None]
    if missing and len(missing) < len(values):
        raise SettingsError(f"OpenID Connect needs {', '.join(_OIDC_REQUIRED)} together; missing: {', '.join(missing)}")
    issuer = values["OIDC_ISSUER_URL"]
    if issuer is not None and not issuer.lower().startswith(("https://", "http://")):
        raise SettingsError(f"OIDC_ISSUER_URL must be an http(s) URL, got {issuer!r}")
    return {
        "oidc_issuer_url": issuer.rstrip("/") if issuer else None, "oidc_client_id": values["OIDC_CLIENT_ID"],
        "oidc_client_secret": values["OIDC_CLIENT_SECRET"], "oidc_redirect_url": values["OIDC_REDIRECT_URL"],
        "oidc_groups_claim": _opt(env, "OIDC_GROUPS_CLAIM") or "groups",
        "oidc_username_claim": _opt(env, "OIDC_USERNAME_CLAIM") or "preferred_username",
    }


def _opt(env: Mapping[str, str], name: str) -> str | None:
    value = env.get(name, "").strip()
    return value or None


@dataclass(frozen=True)
class Settings:
    database_url: str | None = None
    database_read_url: str | None = None
    data_dir: Path = Path("data")
    min_free_disk_mb: int = 1024  # below this much free space an upload is refused before anything is written
    backup_seconds: float = 3600.0
    ollama_base_url: str = "http://127.0.0.1:11434"
    embed_backend: str = "auto"
    embed_model: str = "bge-m3"
    embed_query_prefix: str | None = None  # None: the model's known default (ragcore.embed.ollama)
    embed_passage_prefix: str | None = None
    llm_backend: str = "auto"
    llm_model: str = "qwen2.5:7b-instruct"
    openai_base_url: str | None = None
    openai_api_key: str | None = field(default=None, repr=False)
    llm_max_tokens: int = 512  # a short cited Turkish answer is 50-200 tokens; the rest is a model that will not stop
    llm_answer_seconds: float = 60.0  # the whole answer, streamed or not (ragcore.answer.llm_clients)
    chunk_size: int = 1000
    chunk_overlap: int = 150
    progress_line_seconds: float = 10.0  # the CLI's progress lines in a log or a pipe (ragcore.cli.progress)
    # Bounds of every page drawing (ragcore.documents.rendering): pixels per drawing, the lowest
    # dpi a page image or an OCR drawing is lowered to, and OCR's pages per document and seconds per page.
    render_max_megapixels: int = 20
    page_image_min_dpi: int = 50
    ocr_min_dpi: int = 150
    ocr_max_pages: int = 500
    ocr_page_seconds: float = 60.0
    top_k: int = 5
    retrieval_mode: str = "auto"
    dense_windows: bool = True
    refusal_threshold: float | None = None
    answer_policy: str = "rules"
    reader_candidates: int = 12  # chunks the reader reads per question (retrieval's best first)
    max_upload_mb: int = 50
    # The caps a .docx is read under (ragcore.documents.word.WordLimits; the reasons in SETTINGS_DOC
    # and the README). A real 500-page manual stays far below each; memory stays bounded at each.
    docx_max_unpacked_mb: int = 256
    docx_max_elements: int = 3_000_000
    docx_max_paragraphs: int = 200_000
    docx_max_depth: int = 100
    docx_max_characters: int = 10_000_000
    # The caps a .xlsx and a .pptx are read under besides the package caps above
    # (ragcore.documents.sheets / slides; the reasons in SETTINGS_DOC).
    xlsx_max_rows: int = 100_000
    xlsx_max_cells: int = 1_000_000
    pptx_max_slides: int = 1000
    max_question_chars: int = 1000
    conversation_retention_days: int = 180  # a saved conversation untouched this long is deleted
    conversation_max_turns: int = 200  # questions per saved conversation
    audit_retention_days: int = 365  # the questions log keeps a row this long; 0: forever
    audit_export_max_rows: int = 100_000  # rows per CSV export of the audit trail
    cookie_key: str | None = field(default=None, repr=False)
    admin_password: str | None = field(default=None, repr=False)
    tquad_dir: Path = Path("../shared/data/tquad")
    documents_dir: Path = Path("../shared/data/documents")
    login_sleep_time: float = 0.7
    ldap_url: str | None = None
    ldap_start_tls: bool = False
    ldap_allow_plain: bool = False
    ldap_ca_file: Path | None = None
    ldap_bind_dn: str | None = None
    ldap_bind_password: str | None = field(default=None, repr=False)
    ldap_user_base_dn: str | None = None
    ldap_user_filter: str = "(uid={username})"
    ldap_group_base_dn: str | None = None
    ldap_disabled_group: str | None = None
    ldap_timeout_seconds: float = 5.0
    ldap_recheck_seconds: float = 300.0
    oidc_issuer_url: str | None = None
    oidc_client_id: str | None = None
    oidc_client_secret: str | None = field(default=None, repr=False)
    oidc_redirect_url: str | None = None
    oidc_groups_claim: str = "groups"
    oidc_username_claim: str = "preferred_username"
    log_level: str = "INFO"
    worker_in_app: bool = True
    job_heartbeat_seconds: float = 10.0
    watch_dir: Path | None = None  # a watched share; None: no folder is watched
    watch_interval_seconds: float = 300.0
    watch_default_roles: tuple[str, ...] = ("admin",)
    watch_max_files: int = 10_000
    job_modules: tuple[str, ...] = ("eval.jobs",)
    api_host: str = "127.0.0.1"
    api_port: int = 8502
    # Proxies whose X-Forwarded-For is believed (normalised CIDRs); none by default, not even
    # 127.0.0.1: any local process could otherwise choose its throttling address.
    trusted_proxies: tuple[str, ...] = ()

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, dotenv: Path | None = Path(".env")) -> Settings:
        """Build settings from `env` (default: os.environ) over an optional `.env` file."""
        merged: dict[str, str] = {}
        if dotenv is not None and dotenv.is_file():
            merged.update({k: v for k, v in dotenv_values(dotenv).items() if v is not None})
        merged.update(os.environ if env is None else env)
        chunk_size = _int(merged, "CHUNK_SIZE", 1000, minimum=100)
        chunk_overlap = _int(merged, "CHUNK_OVERLAP", 150)
        if chunk_overlap >= chunk_size:
            raise SettingsError(f"CHUNK_OVERLAP ({chunk_overlap}) must be smaller than CHUNK_SIZE ({chunk_size})")
        reader_candidates = _int(merged, "READER_CANDIDATES", 12, minimum=1)
        if reader_candidates > MAX_READER_CANDIDATES:  # each costs the reader a few model rows per question
            raise SettingsError(f"READER_CANDIDATES must be at most {MAX_READER_CANDIDATES}, got {reader_candidates}")
        return cls(
            database_url=_opt(merged, "DATABASE_URL"),
            database_read_url=_opt(merged, "DATABASE_READ_URL"),
            data_dir=Path(merged.get("DATA_DIR", "").strip() or "data").expanduser().absolute(),
            min_free_disk_mb=_int(merged, "MIN_FREE_DISK_MB", 1024),
            backup_seconds=_bounded_float(merged, "BACKUP_SECONDS", 3600.0, (10.0, 86_400.0)),
            ollama_base_url=(_opt(merged, "OLLAMA_BASE_URL") or "http://127.0.0.1:11434").rstrip("/"),
            embed_backend=_choice(merged, "EMBED_BACKEND", EMBED_BACKENDS, "auto"),
            embed_model=_opt(merged, "EMBED_MODEL") or "bge-m3",
            embed_query_prefix=_prefix(merged, "EMBED_QUERY_PREFIX"),
            embed_passage_prefix=_prefix(merged, "EMBED_PASSAGE_PREFIX"),
            llm_backend=_choice(merged, "LLM_BACKEND", LLM_BACKENDS, "auto"),
            llm_model=_opt(merged, "LLM_MODEL") or "qwen2.5:7b-instruct",
            openai_base_url=(_opt(merged, "OPENAI_BASE_URL") or "").rstrip("/") or None,
            openai_api_key=_opt(merged, "OPENAI_API_KEY"),
            llm_max_tokens=_bounded_int(merged, "LLM_MAX_TOKENS", 512, MAX_TOKENS_RANGE),
            llm_answer_seconds=_bounded_float(merged, "LLM_ANSWER_SECONDS", 60.0, ANSWER_SECONDS_RANGE),
            chunk_size=chunk_size,
            chunk_overlap=chunk_overlap,
            progress_line_seconds=_positive_float(merged, "PROGRESS_LINE_SECONDS", 10.0),
            render_max_megapixels=_int(merged, "RENDER_MAX_MEGAPIXELS", 20, minimum=1),
            page_image_min_dpi=_int(merged, "PAGE_IMAGE_MIN_DPI", 50, minimum=10),
            ocr_min_dpi=_int(merged, "OCR_MIN_DPI", 150, minimum=10),
            ocr_max_pages=_int(merged, "OCR_MAX_PAGES", 500, minimum=1),
            ocr_page_seconds=_positive_float(merged, "OCR_PAGE_SECONDS", 60.0),
            top_k=_int(merged, "TOP_K", 5, minimum=1),
            retrieval_mode=_choice(merged, "RETRIEVAL_MODE", RETRIEVAL_MODES, "auto"),
            dense_windows=_bool(merged, "DENSE_WINDOWS", True),
            refusal_threshold=_float_or_none(merged, "REFUSAL_THRESHOLD"),
            answer_policy=_choice(merged, "ANSWER_POLICY", ANSWER_POLICIES, "rules"),
            reader_candidates=reader_candidates,
            max_upload_mb=_int(merged, "MAX_UPLOAD_MB", 50, minimum=1),
            docx_max_unpacked_mb=_int(merged, "DOCX_MAX_UNPACKED_MB", 256, minimum=1),
            docx_max_elements=_int(merged, "DOCX_MAX_ELEMENTS", 3_000_000, minimum=1),
            docx_max_paragraphs=_int(merged, "DOCX_MAX_PARAGRAPHS", 200_000, minimum=1),
            docx_max_depth=_docx_depth(merged),
            docx_max_characters=_int(merged, "DOCX_MAX_CHARACTERS", 10_000_000, minimum=1),
            xlsx_max_rows=_int(merged, "XLSX_MAX_ROWS", 100_000, minimum=1),
            xlsx_max_cells=_int(merged, "XLSX_MAX_CELLS", 1_000_000, minimum=1),
            pptx_max_slides=_int(merged, "PPTX_MAX_SLIDES", 1000, minimum=1),
            max_question_chars=_int(merged, "MAX_QUESTION_CHARS", 1000, minimum=10),
            conversation_retention_days=_int(merged, "CONVERSATION_RETENTION_DAYS", 180, minimum=1),
            conversation_max_turns=_int(merged, "CONVERSATION_MAX_TURNS", 200, minimum=1),
            audit_retention_days=_int(merged, "AUDIT_RETENTION_DAYS", 365, minimum=0),
            audit_export_max_rows=_int(merged, "AUDIT_EXPORT_MAX_ROWS", 100_000, minimum=1),
            cookie_key=_opt(merged, "COOKIE_KEY"),
            admin_password=_opt(merged, "ADMIN_PASSWORD"),
            tquad_dir=Path(merged.get("TQUAD_DIR", "").strip() or "../shared/data/tquad").expanduser(),
            documents_dir=Path(merged.get("DOCUMENTS_DIR", "").strip() or "../shared/data/documents").expanduser(),
            login_sleep_time=_nonnegative_float(merged, "LOGIN_SLEEP_TIME", 0.7),
            **_ldap(merged),
            **_oidc(merged),
            log_level=(_opt(merged, "LOG_LEVEL") or "INFO").upper(),
            worker_in_app=_bool(merged, "WORKER_IN_APP", True),
            job_heartbeat_seconds=_positive_float(merged, "JOB_HEARTBEAT_SECONDS", 10.0),
            watch_dir=_optional_dir(merged, "WATCH_DIR"),
            watch_interval_seconds=_bounded_float(merged, "WATCH_INTERVAL_SECONDS", 300.0, (10.0, 86_400.0)),
            watch_default_roles=_names(merged, "WATCH_DEFAULT_ROLES", ("admin",)),
            watch_max_files=_bounded_int(merged, "WATCH_MAX_FILES", 10_000, (1, 1_000_000)),
            job_modules=_names(merged, "JOB_MODULES", ("eval.jobs",)),
            api_host=_opt(merged, "API_HOST") or "127.0.0.1",
            api_port=_port(merged, "API_PORT", 8502),
            trusted_proxies=_networks(merged, "TRUSTED_PROXIES"),
        )

    def with_(self, **changes: object) -> Settings:
        """A copy with some fields changed (tests, the evaluation lab)."""
        return replace(self, **changes)  # type: ignore[arg-type]

    @property
    def max_upload_bytes(self) -> int:
        return self.max_upload_mb * 1024 * 1024

    @property
    def min_free_disk_bytes(self) -> int:
        return self.min_free_disk_mb * 1024 * 1024

    @property
    def uploads_dir(self) -> Path:
        return self.data_dir / "uploads"

    @property
    def secrets_dir(self) -> Path:
        return self.data_dir / "secrets"

    @property
    def incoming_dir(self) -> Path:
        """Uploads staged for a background job (shared by every worker, like uploads_dir)."""
        return self.uploads_dir / "incoming"

    @property
    def stalled_worker_seconds(self) -> float:
        """A worker whose heartbeat is older than this is taken for dead."""
        return 3 * self.job_heartbeat_seconds
