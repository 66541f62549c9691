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
    "DOCX_MAX_UNPACKED_MB": ("256", "a .docx may unpack to at most this many MB (all its parts); refused before any XML is read"),
    "DOCX_MAX_ELEMENTS": ("3000000", "XML elements (attributes, namespace declarations and comments count too) in all parts of a .docx; counted while streaming, before any tree is built"),
    "DOCX_MAX_PARAGRAPHS": ("200000", "paragraphs (w:p, table cells' and headers' too) in a .docx"),
    "DOCX_MAX_DEPTH": ("100", "nesting depth of a .docx's XML (10-256; Word writes a few dozen levels at most)"),
    "DOCX_MAX_CHARACTERS": ("10000000", "characters of text read from a .docx (numbering and merged table cells included)"),
    "MAX_QUESTION_CHARS": ("1000", "longest question accepted"),
    "CONVERSATION_RETENTION_DAYS": ("180", "saved conversations untouched this many days are deleted (the expire_conversations job)"),
    "CONVERSATION_MAX_TURNS": ("200", "questions one saved conversation holds; then the user starts a new one"),
    "COOKIE_KEY": ("(generated)", "login cookie signing key; generated into DATA_DIR if unset"),
    "ADMIN_PASSWORD": ("(generated)", "first admin password; generated and printed once if unset"),
    "TQUAD_DIR": ("../shared/data/tquad", "TQuAD v0.1 train/dev JSON files"),
    "DOCUMENTS_DIR": ("../shared/data/documents", "sample law PDFs"),
    "LOGIN_SLEEP_TIME": ("0.7", "seconds the login form waits on each signed-out run (slows guessing)"),
    "LOG_LEVEL": ("INFO", "Python log level"),
    "WORKER_IN_APP": ("true", "the app (`make run`) and the REST API (`make api`) each run a job worker inside them; false: only separate `python -m ragcore worker` processes run jobs"),
    "JOB_MODULES": ("eval.jobs", "comma-separated modules that register extra job kinds (the lab's); loaded by workers"),
    "JOB_HEARTBEAT_SECONDS": ("10", "worker heartbeat; a worker silent for 3× this long is taken for dead, its job failed"),
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


def _opt(env: Mapping[str, str], name: str) -> str | None:
    value = env.get(name, "").strip()
    return value or None


@dataclass(frozen=True)
class Settings:
    database_url: str | None = None
    database_read_url: str | None = None
    data_dir: Path = Path("data")
    min_free_disk_mb: int = 1024  # below this much free space an upload is refused before anything is written
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
    max_question_chars: int = 1000
    conversation_retention_days: int = 180  # a saved conversation untouched this long is deleted
    conversation_max_turns: int = 200  # questions per saved conversation
    cookie_key: str | None = field(default=None, repr=False)
    admin_password: str | None = field(default=None, repr=False)
    tquad_dir: Path = Path("../shared/data/tquad")
    documents_dir: Path = Path("../shared/data/documents")
    login_sleep_time: float = 0.7
    log_level: str = "INFO"
    worker_in_app: bool = True
    job_heartbeat_seconds: float = 10.0
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
            max_question_chars=_int(merged, "MAX_QUESTION_CHARS", 1000, minimum=10),
            conversation_retention_days=_int(merged, "CONVERSATION_RETENTION_DAYS", 180, minimum=1),
            conversation_max_turns=_int(merged, "CONVERSATION_MAX_TURNS", 200, minimum=1),
            cookie_key=_opt(merged, "COOKIE_KEY"),
            admin_password=_opt(merged, "ADMIN_PASSWORD"),
            tquad_dir=Path(merged.get("TQUAD_DIR", "").strip() or "../shared/data/tquad").expanduser(),
            documents_dir=Path(merged.get("DOCUMENTS_DIR", "").strip() or "../shared/data/documents").expanduser(),
            login_sleep_time=_nonnegative_float(merged, "LOGIN_SLEEP_TIME", 0.7),
            log_level=(_opt(merged, "LOG_LEVEL") or "INFO").upper(),
            worker_in_app=_bool(merged, "WORKER_IN_APP", True),
            job_heartbeat_seconds=_positive_float(merged, "JOB_HEARTBEAT_SECONDS", 10.0),
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
