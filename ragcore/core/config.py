"""One typed settings object, read from the environment (and an optional `.env`) once.

Every module takes a `Settings` argument instead of reading the environment itself, so
tests can build isolated settings and nothing changes behind a running process.

Each setting is declared once, as a field of `Settings` (pydantic-settings): its type, default,
bounds, environment name (the field's name in capitals) and a help line in English (the field's
description: docs/configuration.md) and Turkish (`python -m ragcore doctor --settings`).
`SETTINGS_DOC`, the configuration doc's table and the doctor's listing are derived from them.
"""

from __future__ import annotations

import ipaddress
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal, get_args
from urllib.parse import urlsplit, urlunsplit

from pydantic import Field, ValidationError, field_validator, model_validator
from pydantic.fields import FieldInfo
from pydantic_settings import (
    BaseSettings,
    DotEnvSettingsSource,
    EnvSettingsSource,
    NoDecode,
    SettingsConfigDict,
)

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

EmbedBackend = Literal["auto", "e5", "ollama", "use"]
LlmBackend = Literal["auto", "ollama", "openai", "extractive"]
RetrievalMode = Literal["auto", "rrf", "weighted", "dense", "lexical"]
# How an answer is chosen: the reader (ragcore.reader: a cross-encoder reads the candidates), the
# default since round 25, or the rules (the evidence gate, the sentence quoter and its quote check),
# which answer more questions and more of them wrongly (docs/reader.md, "Round 25").
AnswerPolicy = Literal["reader", "rules"]
EMBED_BACKENDS: tuple[str, ...] = get_args(EmbedBackend)
LLM_BACKENDS: tuple[str, ...] = get_args(LlmBackend)
RETRIEVAL_MODES: tuple[str, ...] = get_args(RetrievalMode)
ANSWER_POLICIES: tuple[str, ...] = get_args(AnswerPolicy)
MAX_READER_CANDIDATES = 50  # each costs the reader a few model rows per question
# A language model's answer: bounds an operator may choose between (LLM_MAX_TOKENS, LLM_ANSWER_SECONDS).
MAX_TOKENS_RANGE = (16, 8192)
ANSWER_SECONDS_RANGE = (1.0, 3600.0)
MAX_XML_DEPTH = 256  # libxml2's own nesting limit without XML_PARSE_HUGE (lxml's huge_tree)

# Comma-separated lists in the environment (not JSON, pydantic-settings' default for a tuple).
Names = Annotated[tuple[str, ...], NoDecode]
# Read verbatim, not stripped: the trailing space of "search_query: " belongs to the prefix.
_VERBATIM = frozenset({"embed_query_prefix", "embed_passage_prefix"})


class SettingsError(ValueError):
    """A setting has a value that cannot be used; the message names the variable."""


def _setting(default: Any, en: str, tr: str, *, secret: bool = False, shown: str | None = None,
             **bounds: Any) -> Any:
    """One setting's declaration: default, bounds, and its help in English and Turkish.

    `secret` keeps the value out of repr and model_dump and shows it as *** in `doctor` (its users
    read it as a plain str); `shown` is how the docs name a default that is not a plain value
    ("(generated)", "(calibrated)")."""
    extra = {"tr": tr, "secret": secret, "shown": shown}
    return Field(default, description=en, json_schema_extra=extra, repr=not secret, exclude=secret, **bounds)


@dataclass(frozen=True)
class SettingDeclaration:
    """One setting as declared: what the docs table, SETTINGS_DOC and `doctor --settings` show."""

    field: str
    name: str  # the environment variable
    default: str  # shown as the docs show it: a value, or "(unset)", "(generated)", …
    literal: bool  # the default is a value (the docs set it as code), not a "(…)" description
    en: str
    tr: str
    secret: bool


def shown_value(value: Any, *, secret: bool) -> str:
    """A setting's value as the docs and `doctor` write it; a set secret is ***."""
    if value is None or value == ():
        return "(unset)"
    if secret:
        return "***"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, tuple):
        return ",".join(value)
    return _without_password(str(value))


# The docs' words for a value that is not one ("(unset)", a declaration's `shown`), as the Turkish
# listing of `doctor --settings` says them; a test checks every declared one has its Turkish.
SHOWN_IN_TURKISH = {"(unset)": "(boş)", "(generated)": "(ilk açılışta üretilir)", "(calibrated)": "(ayarlanmış)",
                    "(model default)": "(modelin varsayılanı)", "(anonymous)": "(anonim)", "(system)": "(sistemin)",
                    "(shipped)": "(kurulumla gelen)"}


def shown_in_turkish(shown: str) -> str:
    """A shown value or default in Turkish: the docs' "(…)" words translated, a value as it is."""
    return SHOWN_IN_TURKISH.get(shown, shown)


def _without_password(text: str) -> str:
    """A URL's password (`postgresql://user:pw@host/db`, or libpq's `password=pw`) as ***: a
    database URL is not declared secret, but the password inside it is one."""
    try:
        parts = urlsplit(text)
        password = parts.password
    except ValueError:  # not a URL
        password = None
    if password:
        host = parts.netloc.rpartition("@")[2]
        return urlunsplit(parts._replace(netloc=f"{parts.username or ''}:***@{host}"))
    return re.sub(r"(password\s*=\s*)\S+", r"\1***", text)


class Settings(BaseSettings):
    """Every setting of Dayanak. `Settings(...)` is the declared defaults plus the given values
    (tests, the lab: never the environment); `Settings.from_env()` reads the environment."""

    # The variable is the field's name in capitals (found in any case, as pydantic-settings does);
    # other variables of the environment or .env are ignored; the defaults below are written in
    # their final form, so only DATA_DIR's (made absolute) is validated.
    model_config = SettingsConfigDict(frozen=True, extra="ignore", case_sensitive=False, env_ignore_empty=True,
                                      validate_default=False)

    database_url: str | None = _setting(
        None, "PostgreSQL URL; unset starts the embedded server under DATA_DIR",
        "PostgreSQL adresi; boşsa DATA_DIR altında gömülü sunucu başlar")
    database_read_url: str | None = _setting(
        None, "read replica (hot standby) for retrieval — chat answers, Kaynak arama, `search`, `ask`, the REST "
        "API's `/v1/chat` and `/v1/search`; writes stay on `DATABASE_URL` ([docs/scaling.md](scaling.md))",
        "arama ve cevaplar için okuma kopyası (hot standby); yazmalar DATABASE_URL'de kalır")
    data_dir: Path = _setting(
        Path("data"), "embedded database, stored uploads, secrets, caches",
        "gömülü veritabanı, yüklenen dosyalar, gizli anahtarlar, önbellekler", shown="./data",
        validate_default=True)
    min_free_disk_mb: int = _setting(
        1024, "uploads are refused (before anything is written) while DATA_DIR or the embedded database's folder "
        "has less free space; `doctor` and the status panel warn; 0 turns the check off",
        "DATA_DIR'de ya da veritabanı klasöründe bundan az boş yer (MB) varsa yükleme reddedilir; 0: denetim yok",
        ge=0)
    backup_seconds: float = _setting(
        3600.0, "longest `python -m ragcore backup`'s pg_dump, or `restore`'s pg_restore, may run (10–86400 s); "
        "past it the backup folder is removed and the restore's transaction rolled back "
        "([docs/operations.md](operations.md#backups))",
        "yedeğin pg_dump'ı ya da geri yüklemenin pg_restore'u en çok bu kadar sürebilir (10–86400 sn)",
        ge=10.0, le=86_400.0)
    ollama_base_url: str = _setting(
        "http://127.0.0.1:11434", "Ollama server for embeddings and answers",
        "vektörler ve cevaplar için Ollama sunucusu")
    embed_backend: EmbedBackend = _setting(
        "auto", "auto | e5 (embedded multilingual-e5-small) | ollama | use (embedded USE, small machines)",
        "auto | e5 (gömülü multilingual-e5-small) | ollama | use (gömülü USE, küçük makineler)")
    embed_model: str = _setting("bge-m3", "Ollama embedding model", "Ollama'nın vektör modeli")
    embed_query_prefix: str | None = _setting(
        None, "Ollama only: text put before every question; `none` for no prefix",
        "yalnız Ollama: her sorunun önüne eklenen metin; `none`: önek yok", shown="(model default)")
    embed_passage_prefix: str | None = _setting(
        None, "Ollama only: text put before every chunk; changes the index name",
        "yalnız Ollama: her parçanın önüne eklenen metin; dizinin adını değiştirir", shown="(model default)")
    llm_backend: LlmBackend = _setting(
        "auto", "auto | ollama | openai | extractive", "auto | ollama | openai | extractive (dil modeli yok)")
    llm_model: str = _setting(
        "qwen2.5:7b-instruct", "chat model for Ollama or the OpenAI-compatible server",
        "Ollama'nın ya da OpenAI uyumlu sunucunun sohbet modeli")
    openai_base_url: str | None = _setting(
        None, "OpenAI-compatible server, e.g. http://127.0.0.1:8080/v1",
        "OpenAI uyumlu sunucu, ör. http://127.0.0.1:8080/v1")
    openai_api_key: str | None = _setting(
        None, "API key for the OpenAI-compatible server, if it needs one",
        "OpenAI uyumlu sunucunun API anahtarı (isterse)", secret=True)
    # A short cited Turkish answer is 50-200 tokens; the rest is a model that will not stop.
    llm_max_tokens: int = _setting(
        512, "most tokens a language model may generate for one answer, sent as Ollama's `num_predict` and the "
        "OpenAI-compatible `max_tokens` (16–8192); a short cited Turkish answer takes 50–200, so an answer that "
        "reaches the limit is cut off mid-sentence and is replaced by the extractive answer with a note",
        "dil modelinin bir cevapta üretebileceği en çok token (16–8192); sınıra varan cevabın yerine alıntılar "
        "gösterilir", ge=MAX_TOKENS_RANGE[0], le=MAX_TOKENS_RANGE[1])
    llm_answer_seconds: float = _setting(
        60.0, "wall-clock limit of one language-model answer, from the request to the last piece, first token "
        "included (1–3600 s); the client stops reading there, even from a server that trickles one token a "
        "second, and the extractive answer replaces it with a note. Raise it for a large model on a CPU-only "
        "machine", "bir dil modeli cevabının ilk token dahil en uzun süresi (1–3600 sn); kesilen cevabın yerine "
        "alıntılar gösterilir", ge=ANSWER_SECONDS_RANGE[0], le=ANSWER_SECONDS_RANGE[1])
    chunk_size: int = _setting(1000, "target chunk size in characters", "hedef parça boyu (karakter)", ge=100)
    chunk_overlap: int = _setting(
        150, "overlap between prose chunks in characters",
        "art arda metin parçalarının örtüşmesi (karakter); CHUNK_SIZE'dan küçük olmalı", ge=0)
    progress_line_seconds: float = _setting(
        10.0, "seconds between the progress lines `python -m ragcore ingest` and `reembed` print on stderr when it "
        "is not a terminal (a log, a pipe); on a terminal a progress bar (tqdm) is drawn instead",
        "`ingest` ve `reembed` çıktısı terminal değilken (log, boru) ilerleme satırları arasındaki saniye", gt=0)
    # Bounds of every page drawing (ragcore.documents.rendering): pixels per drawing, the lowest
    # dpi a page image or an OCR drawing is lowered to, and OCR's pages per document and seconds per page.
    render_max_megapixels: int = _setting(
        20, "largest drawing of a PDF page (page image, OCR): width × height at the chosen dpi, in millions of "
        "pixels; a larger page is drawn at a lower dpi (an A4 page at 300 dpi is 8.7, an A3 page 17.4). Checked "
        "by arithmetic before PDFium draws anything, so memory stays bounded (about 150 MB for the largest page "
        "image, at most two drawn at once per process)",
        "bir PDF sayfasının en büyük çizimi (milyon piksel); daha büyük sayfa daha düşük dpi ile çizilir", ge=1)
    page_image_min_dpi: int = _setting(
        50, "lowest dpi a page image (the cited-page dialog, `GET /v1/documents/{id}/pages/{n}/image`) is lowered "
        "to; a page too large for `RENDER_MAX_MEGAPIXELS` even there is refused with a Turkish message (API: 422 "
        "`page_too_large`), its text and one-page PDF still offered",
        "sayfa görüntüsünün inebileceği en düşük dpi; orada da sığmayan sayfa bir iletiyle reddedilir", ge=10)
    ocr_min_dpi: int = _setting(
        150, "lowest dpi a scanned page is drawn at for OCR (below it Tesseract misreads body text); a page too "
        "large for `RENDER_MAX_MEGAPIXELS` even there is not read and is listed among the pages without text",
        "taranmış sayfanın OCR için çizildiği en düşük dpi; orada da sığmayan sayfa okunmaz", ge=10)
    ocr_max_pages: int = _setting(
        500, "most pages without a text layer one PDF may have read by OCR (about 1.5 s each); more refuse the "
        "upload before any page is read",
        "bir PDF'te OCR ile okunacak en çok metinsiz sayfa; fazlası yüklemeyi baştan reddeder", ge=1)
    ocr_page_seconds: float = _setting(
        60.0, "seconds Tesseract may take on one page (a 300-dpi A4 page takes a few); a page that takes longer "
        "fails the upload, naming the page, and nothing is stored",
        "Tesseract'ın bir sayfaya ayırabileceği saniye; aşan sayfa yüklemeyi, sayfayı adıyla söyleyerek düşürür",
        gt=0)
    top_k: int = _setting(5, "sources passed to the answer", "cevaba verilen kaynak sayısı", ge=1)
    retrieval_mode: RetrievalMode = _setting(
        "auto", "auto | rrf | weighted | dense | lexical", "arama yolu: auto | rrf | weighted | dense | lexical")
    dense_windows: bool = _setting(
        True, "dense leg scores a chunk by the mean of its vector's cosine and its best sentence window's "
        "(two-sentence windows and the article heading, stored with every chunk of an index built with them; the "
        "setting decides when the index is built — first start, `reembed` — and uploads follow the index's "
        "record: docs/ingestion.md)",
        "vektör araması parçayı kendi benzerliği ile en iyi cümle penceresininkinin ortalamasıyla puanlar; "
        "dizin kurulurken (ilk başlangıç, `reembed`) geçerlidir")
    lexical_postings_budget: int = _setting(
        30000, "most postings the lexical leg reads for one question (0: exact BM25 whatever it reads); a question "
        "whose exact plan reads more is scored over the reads that fit, its best 800 chunks by them scored exactly. "
        "Bounds the leg's time for a reader of many roles or a very large corpus; a plan within it is exact "
        "(docs/scaling.md)",
        "sözcük aramasının bir soru için okuyabileceği en çok kayıt (0: her zaman tam BM25)", ge=0)
    refusal_threshold: float | None = _setting(
        None, "override the calibrated evidence threshold; when set, this single cut decides (answer or refuse) "
        "instead of the three-outcome model (with `ANSWER_POLICY=reader`: the reader's one cut)",
        "ölçülmüş kanıt eşiğinin yerine geçen tek eşik (ANSWER_POLICY=reader ile okuyucunun eşiği)",
        shown="(calibrated)")
    # `reader` since round 25: it reads the fact first more often than the rules and answers wrongly
    # less, within 1.5 s at six candidates (docs/reader.md, "Round 25").
    answer_policy: AnswerPolicy = _setting(
        "reader", "`reader`: the cross-encoder of `ragcore/reader` orders the candidates, picks the quote and "
        "decides the outcome (the evidence gate still refuses what nothing permitted is near); `rules`: the earlier "
        "evidence gate, sentence quoter and quote check (more answers, more of them wrong) "
        "([docs/reader.md](reader.md))",
        "cevaplama yolu: `reader` (okuyucu model) ya da `rules` (kanıt eşiği, cümle alıntısı, alıntı denetimi)")
    reader_model_dir: Path | None = _setting(
        None, "with `ANSWER_POLICY=reader`: a folder holding another reader's `reader.json` and `reader.onnx` "
        "(one trained on the company's own questions, or a lab run's); its hash is checked as the shipped one's",
        "ANSWER_POLICY=reader ile başka bir okuyucu modelin klasörü (`reader.json`, `reader.onnx`); boşsa "
        "kurulumla gelen model", shown="(shipped)")
    # Six since round 24: the reader's p95 under 1.5 s (bench/results/answer_latency.json) with
    # the held-back order as at twelve (docs/reader.md, "Round 24").
    reader_candidates: int = _setting(
        6, "with `ANSWER_POLICY=reader`: the retrieved chunks the reader reads per question (1–50)",
        "ANSWER_POLICY=reader ile okuyucunun soru başına okuduğu parça sayısı (1–50)",
        ge=1, le=MAX_READER_CANDIDATES)
    max_upload_mb: int = _setting(
        50, "largest PDF, .docx, .xlsx or .pptx accepted for upload",
        "yüklenebilecek en büyük PDF, .docx, .xlsx ya da .pptx (MB)", ge=1)
    # The caps a .docx is read under (ragcore.documents.word.WordLimits). A real 500-page manual
    # stays far below each; memory stays bounded at each.
    docx_max_unpacked_mb: int = _setting(
        256, "a .docx (and a .xlsx or .pptx: the `DOCX_MAX_*` package caps bound every Office file) may unpack "
        "to at most this many MB, all parts together (told by its ZIP directory, before any XML is read)",
        "bir Office dosyasının açıldığında kaplayabileceği en çok MB (XML okunmadan ZIP dizininden bakılır)", ge=1)
    docx_max_elements: int = _setting(
        3_000_000, "XML nodes of a .docx (or .xlsx, .pptx), all parts together: elements, attributes, namespace "
        "declarations, comments; counted while streaming, before any tree is built (python-docx's tree and the "
        "text cost ~210 bytes a node: ~620 MB at the cap; a 500-page manual has about a million)",
        "bir Office dosyasındaki en çok XML düğümü (öğe, nitelik, ad alanı, yorum); ağaç kurulmadan sayılır", ge=1)
    docx_max_paragraphs: int = _setting(
        200_000, "paragraphs (`w:p`, in tables, headers and notes too) of a .docx; a 500-page manual has some "
        "20,000", "bir .docx'teki en çok paragraf (tablo, üst bilgi ve notlardakiler dahil)", ge=1)
    # Within 10-256: libxml2 itself stops at 256 levels without its huge-tree option (off
    # everywhere here), so a larger cap would never be the one to refuse.
    docx_max_depth: int = _setting(
        100, "nesting depth of a .docx's (or .xlsx's, .pptx's) XML (10–256; Word writes a few dozen levels at "
        "most, libxml2 stops at 256)", "bir Office dosyasının XML iç içelik derinliği (10–256)",
        ge=10, le=MAX_XML_DEPTH)
    docx_max_characters: int = _setting(
        10_000_000, "characters of text read from a .docx (list numbers and merged table cells included; a "
        "500-page manual has under 2 million), a .xlsx (its header row repeated in every chunk included) or a "
        ".pptx", "bir .docx, .xlsx ya da .pptx'ten okunan en çok karakter", ge=1)
    # The caps a .xlsx and a .pptx are read under besides the package caps above
    # (ragcore.documents.sheets / slides).
    xlsx_max_rows: int = _setting(
        100_000, "rows of a .xlsx, all sheets together (hidden ones too); counted in the XML before openpyxl reads "
        "it, and again while reading (empty rows between rows included). Each row is embedded: some 10,000 "
        "chunks at the cap", "bir .xlsx'in bütün sayfalarındaki en çok satır (gizliler dahil)", ge=1)
    xlsx_max_cells: int = _setting(
        1_000_000, "cells of a .xlsx, all sheets together (hidden ones too), and at most as many shared strings "
        "(a sharedStrings bomb is refused before openpyxl loads them); counted in the XML, and again while reading "
        "(empty cells padded into a row included); a row is at most Excel's 16,384 cells",
        "bir .xlsx'in bütün sayfalarındaki en çok hücre (ve en çok bu kadar paylaşılan metin)", ge=1)
    pptx_max_slides: int = _setting(
        1000, "slides of a .pptx, told by its package's directory before python-pptx reads it",
        "bir .pptx'teki en çok slayt", ge=1)
    max_question_chars: int = _setting(
        1000, "longest question accepted", "kabul edilen en uzun soru (karakter)", ge=10)
    conversation_retention_days: int = _setting(
        180, "a saved conversation untouched this many days is deleted, with its turns, by the "
        "`expire_conversations` job (queued by every worker at its start and once a day); until then the lists "
        "and the API no longer show it",
        "bu kadar gün dokunulmayan kayıtlı sohbet, soruları ile birlikte silinir", ge=1)
    conversation_max_turns: int = _setting(
        200, "questions one saved conversation holds; the next one is refused with \"Bu sohbet en fazla 200 soru "
        "tutabilir…\", and the user starts a new conversation",
        "bir kayıtlı sohbetin tutabileceği soru sayısı; sonra yeni sohbet açılır", ge=1)
    audit_retention_days: int = _setting(
        365, "a row of the questions log (the audit trail: question, answer, shown passages, feedback) older than "
        "this many days is deleted by the `expire_audit` job (queued by every worker at its start and once a "
        "day); `0` keeps every row forever",
        "soru kaydının (denetim izi) bir satırı bu kadar günden eskiyse silinir; 0: hiç silinmez", ge=0)
    audit_export_max_rows: int = _setting(
        100_000, "most rows one CSV export of the audit trail holds (Denetim page and "
        "`GET /v1/audit/questions.csv`); a larger selection is cut there and says so in its last line: narrow the "
        "dates or filters", "denetim izinin bir CSV dışa aktarımındaki en çok satır; fazlası için süzgeçleri "
        "daraltın", ge=1)
    cookie_key: str | None = _setting(
        None, "login cookie signing key; generated into DATA_DIR if unset",
        "oturum çerezinin imza anahtarı; boşsa DATA_DIR içinde üretilir", secret=True, shown="(generated)")
    admin_password: str | None = _setting(
        None, "first admin password; generated and printed once if unset",
        "ilk yönetici parolası; boşsa üretilir ve bir kez yazdırılır", secret=True, shown="(generated)")
    tquad_dir: Path = _setting(
        Path("../shared/data/tquad"), "TQuAD v0.1 train/dev JSON files", "TQuAD v0.1 eğitim/geliştirme JSON dosyaları")
    documents_dir: Path = _setting(
        Path("../shared/data/documents"), "sample law PDFs", "örnek mevzuat PDF'leri")
    login_sleep_time: float = _setting(
        0.7, "seconds the login form waits on each signed-out run (slows guessing)",
        "giriş formunun oturum açılmamış her çalışmada beklediği saniye (tahmini yavaşlatır)", ge=0)
    ldap_url: str | None = _setting(
        None, "LDAP/Active Directory server, `ldaps://dc1.firma.local` (or `ldap://` with LDAP_START_TLS); unset: no "
        "directory sign-in", "LDAP/Active Directory sunucusu (`ldaps://…`); boşsa dizinle giriş yok")
    ldap_start_tls: bool = _setting(
        False, "upgrade an `ldap://` connection with StartTLS before any password is sent",
        "`ldap://` bağlantısını parola gönderilmeden önce StartTLS ile şifreler")
    ldap_allow_plain: bool = _setting(
        False, "allow `ldap://` without TLS (passwords cross the network readable; logged and shown as a warning)",
        "TLS'siz `ldap://`'ye izin verir (parolalar ağda okunur; yalnız deneme ağları için)")
    ldap_ca_file: Path | None = _setting(
        None, "PEM file of the CA that signed the directory's certificate (default: the system's CAs)",
        "dizin sertifikasını imzalayan CA'nın PEM dosyası (boşsa sistemin CA'ları)", shown="(system)")
    ldap_bind_dn: str | None = _setting(
        None, "service account that searches for users and re-checks them (e.g. "
        "`CN=dayanak-svc,OU=Servis,DC=firma,DC=local`)",
        "kullanıcıları arayan ve yeniden denetleyen hizmet hesabı", shown="(anonymous)")
    ldap_bind_password: str | None = _setting(
        None, "password of LDAP_BIND_DN", "LDAP_BIND_DN hesabının parolası", secret=True)
    ldap_user_base_dn: str | None = _setting(
        None, "where users are searched (required with LDAP_URL)",
        "kullanıcıların arandığı yer (LDAP_URL ile zorunlu)")
    ldap_user_filter: str = _setting(
        "(uid={username})", "filter that finds a user by the typed name; AD: `(sAMAccountName={username})`",
        "yazılan adla kullanıcıyı bulan süzgeç; AD: `(sAMAccountName={username})`")
    ldap_group_base_dn: str | None = _setting(
        None, "where groups (groupOfNames/group `member`) are searched",
        "grupların arandığı yer", shown="(LDAP_USER_BASE_DN)")
    ldap_disabled_group: str | None = _setting(
        None, "members of this group (DN or cn) are refused, like a disabled account",
        "bu grubun üyeleri kapatılmış hesap gibi reddedilir")
    ldap_timeout_seconds: float = _setting(
        5.0, "connect and operation timeout of one directory request",
        "bir dizin isteğinin bağlanma ve işlem zaman aşımı (sn)", gt=0)
    ldap_recheck_seconds: float = _setting(
        300.0, "a directory user's groups and account are re-read at most this long after the last check; removed "
        "users lose access at the next request after it (0: every request)",
        "dizin kullanıcısının grupları en geç bu kadar saniyede bir yeniden okunur (0: her istekte)", ge=0)
    oidc_issuer_url: str | None = _setting(
        None, "OpenID Connect provider (its `/.well-known/openid-configuration` is read); unset: no 'Kurumsal "
        "hesapla giriş'", "OpenID Connect sağlayıcısı; boşsa 'Kurumsal hesapla giriş' yok")
    oidc_client_id: str | None = _setting(
        None, "client id registered at the provider", "sağlayıcıda kayıtlı istemci kimliği")
    oidc_client_secret: str | None = _setting(
        None, "client secret registered at the provider", "sağlayıcıda kayıtlı istemci parolası", secret=True)
    oidc_redirect_url: str | None = _setting(
        None, "the app's callback as registered at the provider, `https://dayanak.firma.local/oauth2callback`",
        "uygulamanın sağlayıcıda kayıtlı dönüş adresi")
    oidc_groups_claim: str = _setting(
        "groups", "the ID-token claim that lists the user's groups",
        "kimlik belirtecinde kullanıcının gruplarını sayan alan")
    oidc_username_claim: str = _setting(
        "preferred_username", "the claim that names the user (lowercased; must fit the username rules)",
        "kullanıcının adını veren alan (küçük harfe çevrilir)")
    log_level: str = _setting("INFO", "Python log level", "Python günlük düzeyi")
    worker_in_app: bool = _setting(
        True, "the app (`make run`) and the REST API (`make api`) each run a job worker inside them; false: only "
        "separate `python -m ragcore worker` processes run jobs",
        "uygulama ve REST API kendi içinde iş çalıştırıcısı çalıştırır; false: yalnız ayrı `worker` süreçleri")
    job_heartbeat_seconds: float = _setting(
        10.0, "worker heartbeat; a worker silent for 3× this long is taken for dead, its job failed",
        "çalıştırıcının yaşam sinyali; 3 katı süre sessiz kalan ölü sayılır, işi düşer", gt=0)
    watch_dir: Path | None = _setting(
        None, "a folder (a mounted share) kept in step with the documents: a worker scans it every "
        "`WATCH_INTERVAL_SECONDS` (and `python -m ragcore watch` now); a new file is uploaded as a normal job with "
        "the roles of its folder's `.dayanak.toml` (`roles = [\"isg\"]`; the nearest one above it wins), a changed "
        "one becomes its document's next version (switched in when stored), a removed one's document is retired "
        "(kept for the audit trail, no longer answering; the file back brings it back); a file that fails is "
        "listed with its reason and not tried again until it changes. Links and hidden files are not followed",
        "belgelerle eş tutulan klasör (bağlı paylaşım): yeni dosya yüklenir, değişen yeni sürüm olur, silinen "
        "belge emekliye ayrılır")
    watch_interval_seconds: float = _setting(
        300.0, "how often a worker scans `WATCH_DIR` (10–86400)",
        "WATCH_DIR'in kaç saniyede bir tarandığı (10–86400)", ge=10.0, le=86_400.0)
    watch_default_roles: Names = _setting(
        ("admin",), "roles of a watched file with no `.dayanak.toml` in its folder or above it",
        "klasöründe ya da üstünde `.dayanak.toml` olmayan izlenen dosyanın rolleri (virgülle)")
    watch_max_files: int = _setting(
        10_000, "most files one scan reads (1–1000000); beyond it the scan says so and retires nothing",
        "bir taramanın okuduğu en çok dosya (1–1000000); fazlasında hiçbir belge emekliye ayrılmaz",
        ge=1, le=1_000_000)
    job_modules: Names = _setting(
        ("eval.jobs",), "modules that register extra job kinds (the lab's), imported by workers and by "
        "cancel/retry; ragcore never imports the lab itself",
        "ek iş türleri kaydeden modüller (virgülle; laboratuvarınki); çalıştırıcılar yükler")
    api_host: str = _setting(
        "127.0.0.1", "address `python -m ragcore api` binds to (REST API)", "REST API'nin dinlediği adres")
    api_port: int = _setting(8502, "port of the REST API", "REST API'nin portu", ge=1, le=65535)
    # Proxies whose X-Forwarded-For is believed (normalised CIDRs); none by default, not even
    # 127.0.0.1: any local process could otherwise choose its throttling address.
    trusted_proxies: Names = _setting(
        (), "comma-separated IP addresses or networks of reverse proxies whose `X-Forwarded-For` names the client "
        "for the login and API-token throttles; none by default, not even 127.0.0.1 (SECURITY.md, \"The client "
        "address\")", "X-Forwarded-For'una güvenilen ters vekil adresleri ya da ağları (virgülle); varsayılan yok")

    def __init__(self, **values: Any) -> None:
        unknown = sorted(set(values) - set(type(self).model_fields))
        if unknown:  # extra="ignore" is for the environment; a misspelt keyword is a bug
            raise TypeError(f"Settings has no field {', '.join(unknown)}")
        try:
            super().__init__(**values)
        except ValidationError as exc:
            raise _settings_error(exc) from None

    @classmethod
    def settings_customise_sources(cls, settings_cls: type[BaseSettings], init_settings: Any, *_: Any,
                                   **__: Any) -> tuple[Any, ...]:
        """`Settings(...)` takes only its arguments: the environment is read by `from_env`, once."""
        return (init_settings,)

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, dotenv: Path | None = Path(".env")) -> Settings:
        """Build settings from `env` (default: os.environ) over an optional `.env` file.

        A blank value is the default; values are stripped (but for the embedding prefixes)."""
        values: dict[str, Any] = {}
        if dotenv is not None and dotenv.is_file():
            values.update(DotEnvSettingsSource(cls, env_file=dotenv)())
        values.update(_MappingSource(cls, os.environ if env is None else env)())
        for name, value in list(values.items()):
            if isinstance(value, str) and not value.strip():
                del values[name]
            elif isinstance(value, str) and name not in _VERBATIM:
                values[name] = value.strip()
        return cls(**values)

    def replace(self, **changes: Any) -> Settings:
        """A validated copy with some fields changed (tests, the evaluation lab), as
        dataclasses.replace was for the dataclass this was."""
        return type(self)(**{**{name: getattr(self, name) for name in type(self).model_fields}, **changes})

    # Normalisations: idempotent, so a value from a copy passes through them unchanged.
    @field_validator("embed_backend", "llm_backend", "retrieval_mode", "answer_policy", mode="before")
    @classmethod
    def _lower(cls, value: Any) -> Any:
        return value.strip().lower() if isinstance(value, str) else value

    @field_validator("log_level", mode="before")
    @classmethod
    def _upper(cls, value: Any) -> Any:
        return value.strip().upper() if isinstance(value, str) else value

    @field_validator("ollama_base_url", "openai_base_url", "oidc_issuer_url")
    @classmethod
    def _no_trailing_slash(cls, value: str | None) -> str | None:
        return value.rstrip("/") or None if value is not None else None

    @field_validator("embed_query_prefix", "embed_passage_prefix")
    @classmethod
    def _prefix(cls, value: str | None) -> str | None:
        """`none` is no prefix at all; anything else is used verbatim."""
        return "" if value is not None and value.strip().lower() == "none" else value

    @field_validator("data_dir")
    @classmethod
    def _absolute(cls, value: Path) -> Path:
        return value.expanduser().absolute()

    @field_validator("tquad_dir", "documents_dir", "ldap_ca_file", "watch_dir", "reader_model_dir")
    @classmethod
    def _home(cls, value: Path | None) -> Path | None:
        return value.expanduser() if value is not None else None

    @field_validator("watch_default_roles", "job_modules", "trusted_proxies", mode="before")
    @classmethod
    def _comma_separated(cls, value: Any) -> Any:
        if isinstance(value, str):
            return tuple(part.strip() for part in value.split(",") if part.strip())
        return value

    @field_validator("trusted_proxies")
    @classmethod
    def _networks(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        """IP addresses or CIDR networks, normalised (`10.0.0.5` → `10.0.0.5/32`).

        Parsed here with `ipaddress` so a typo stops the process with its name; uvicorn's own
        parser would quietly keep it as a literal host name that no peer ever matches."""
        networks = []
        for part in value:
            try:
                networks.append(str(ipaddress.ip_network(part, strict=False)))
            except ValueError as exc:
                raise SettingsError(f"TRUSTED_PROXIES must list IP addresses or networks (e.g. 10.0.0.5, "
                                    f"10.0.0.0/24), got {part!r}") from exc
        return tuple(dict.fromkeys(networks))

    @field_validator("ldap_user_filter")
    @classmethod
    def _user_filter(cls, value: str) -> str:
        if "{username}" not in value or not (value.startswith("(") and value.endswith(")")):
            raise SettingsError(f"LDAP_USER_FILTER must be a parenthesised filter containing {{username}}, "
                                f"got {value!r}")
        return value

    # The checks across settings.
    @model_validator(mode="after")
    def _chunks(self) -> Settings:
        if self.chunk_overlap >= self.chunk_size:
            raise SettingsError(f"CHUNK_OVERLAP ({self.chunk_overlap}) must be smaller than CHUNK_SIZE "
                                f"({self.chunk_size})")
        return self

    @model_validator(mode="after")
    def _ldap(self) -> Settings:
        """Plain `ldap://` needs LDAP_START_TLS or an explicit LDAP_ALLOW_PLAIN, because the users'
        passwords travel in the bind."""
        url = self.ldap_url
        if url is None:
            return self
        if not url.lower().startswith(("ldap://", "ldaps://")):
            raise SettingsError(f"LDAP_URL must start with ldaps:// or ldap://, got {url!r}")
        if url.lower().startswith("ldap://") and not self.ldap_start_tls and not self.ldap_allow_plain:
            raise SettingsError("LDAP_URL is plain ldap://: use ldaps://, or set LDAP_START_TLS=true; "
                                "LDAP_ALLOW_PLAIN=true sends passwords readable and is for test networks only")
        if self.ldap_user_base_dn is None:
            raise SettingsError("LDAP_USER_BASE_DN is required with LDAP_URL (where the users are searched)")
        return self

    @model_validator(mode="after")
    def _oidc(self) -> Settings:
        """OpenID Connect: all four of `_OIDC_REQUIRED` or none (a half-set provider fails at start)."""
        missing = [name for name in _OIDC_REQUIRED if getattr(self, name.lower()) is None]
        if missing and len(missing) < len(_OIDC_REQUIRED):
            raise SettingsError(f"OpenID Connect needs {', '.join(_OIDC_REQUIRED)} together; "
                                f"missing: {', '.join(missing)}")
        issuer = self.oidc_issuer_url
        if issuer is not None and not issuer.lower().startswith(("https://", "http://")):
            raise SettingsError(f"OIDC_ISSUER_URL must be an http(s) URL, got {issuer!r}")
        return self

    # -- the declarations, read back (docs/configuration.md, SETTINGS_DOC, `doctor --settings`) --
    @classmethod
    def declarations(cls) -> list[SettingDeclaration]:
        """Every setting, in declaration order."""
        declarations = []
        for field, info in cls.model_fields.items():
            extra = info.json_schema_extra if isinstance(info.json_schema_extra, dict) else {}
            shown = extra.get("shown")
            declarations.append(SettingDeclaration(
                field=field, name=field.upper(),
                default=str(shown) if shown else shown_value(info.default, secret=False),
                literal=not shown and info.default not in (None, ()),
                en=info.description or "", tr=str(extra.get("tr") or ""), secret=bool(extra.get("secret"))))
        return declarations

    @classmethod
    def docs_table(cls) -> str:
        """The table of docs/configuration.md, written from the declarations (a test compares them)."""
        rows = ["| variable | default | meaning |", "|---|---|---|"]
        for setting in cls.declarations():
            default = f"`{setting.default}`" if setting.literal else setting.default
            meaning = setting.en.replace("|", "\\|")  # a | inside a cell would end it
            rows.append(f"| `{setting.name}` | {default} | {meaning} |")
        return "\n".join(rows)

    def listing(self) -> list[dict[str, Any]]:
        """Every setting with its current value, secrets as *** (`doctor --settings`)."""
        defaults = type(self)()
        return [{"name": s.name, "value": shown_value(getattr(self, s.field), secret=s.secret),
                 "default": s.default, "changed": getattr(self, s.field) != getattr(defaults, s.field),
                 "secret": s.secret, "help_tr": s.tr, "help_en": s.en} for s in self.declarations()]

    @property
    def reads_with_reader(self) -> bool:
        """Whether answers load the reader model."""
        return self.answer_policy == "reader"

    @property
    def quotes_with_rules(self) -> bool:
        """Whether the rules' sentence quoter answers."""
        return self.answer_policy == "rules"

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


_OIDC_REQUIRED = ("OIDC_ISSUER_URL", "OIDC_CLIENT_ID", "OIDC_CLIENT_SECRET", "OIDC_REDIRECT_URL")


class _MappingSource(EnvSettingsSource):
    """pydantic-settings' environment source over a given mapping (tests pass their own
    environment; the process's is `os.environ`)."""

    def __init__(self, settings_cls: type[BaseSettings], env: Mapping[str, str]) -> None:
        self._mapping = env
        super().__init__(settings_cls)

    def _load_env_vars(self) -> Mapping[str, str | None]:
        return {key.lower(): value for key, value in self._mapping.items()}


def _settings_error(exc: ValidationError) -> SettingsError:
    """pydantic's first complaint as a SettingsError naming the variable, in the words the
    settings used before pydantic ("CHUNK_SIZE must be an integer, got 'abc'")."""
    error = exc.errors(include_url=False)[0]
    cause = (error.get("ctx") or {}).get("error")
    if isinstance(cause, SettingsError):  # our own validators already name the variable
        return cause
    field = str(error["loc"][0]) if error["loc"] else ""
    info = Settings.model_fields.get(field)
    name, raw, kind = field.upper(), error.get("input"), error["type"]
    if kind.startswith("int_"):
        return SettingsError(f"{name} must be an integer, got {raw!r}")
    if kind.startswith("float_"):
        return SettingsError(f"{name} must be a number, got {raw!r}")
    if kind.startswith("bool_"):
        return SettingsError(f"{name} must be true or false, got {raw!r}")
    if kind == "literal_error" and info is not None:
        return SettingsError(f"{name} must be one of {', '.join(get_args(info.annotation))}; got {raw!r}")
    if kind in ("greater_than", "greater_than_equal", "less_than", "less_than_equal") and info is not None:
        return SettingsError(_bound_message(name, info, raw))
    return SettingsError(f"{name}: {error['msg']}, got {raw!r}")


def _bound_message(name: str, info: FieldInfo, raw: Any) -> str:
    bounds = {type(item).__name__: getattr(item, type(item).__name__.lower()) for item in info.metadata
              if type(item).__name__ in ("Ge", "Gt", "Le", "Lt")}
    low, high = bounds.get("Ge"), bounds.get("Le")
    if "Gt" in bounds:
        return f"{name} must be positive, got {raw}"
    if info.annotation is float and low is not None and high is not None:
        return f"{name} must be between {low:g} and {high:g}, got {raw}"
    if info.annotation is float and low == 0:
        return f"{name} must not be negative, got {raw}"
    if high is not None and _number(raw) > high:
        return f"{name} must be at most {high}, got {raw}"
    return f"{name} must be at least {low}, got {raw}"


def _number(raw: Any) -> float:
    try:
        return float(raw)
    except (TypeError, ValueError):
        return float("nan")


# name -> (default, one-line description): the declarations above, read back (docs, tests).
SETTINGS_DOC: dict[str, tuple[str, str]] = {s.name: (s.default, s.en) for s in Settings.declarations()}
