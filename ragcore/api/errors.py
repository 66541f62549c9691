"""Every error the API returns has one shape: `{"error": {"code", "message_tr", "message_en"}}`.

Turkish for the people who read the product's messages, English for the integrator's logs;
`code` is stable for programs. Nothing in a message depends on whether a document the caller
may not read exists (`DOCUMENT_NOT_FOUND` is the same for both), and no message carries a
connection string, a stack trace or a driver error (those go to the server log, redacted).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

import psycopg
import psycopg_pool
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from ragcore.store import DatabaseError

log = logging.getLogger(__name__)


class ApiError(Exception):
    """An error response: HTTP status, stable code, Turkish and English message."""

    def __init__(self, status: int, code: str, message_tr: str, message_en: str,
                 headers: Mapping[str, str] | None = None) -> None:
        super().__init__(message_en)
        self.status = status
        self.code = code
        self.message_tr = message_tr
        self.message_en = message_en
        self.headers = dict(headers or {})

    def body(self) -> dict[str, Any]:
        return error_body(self.code, self.message_tr, self.message_en)

    def response(self) -> JSONResponse:
        return JSONResponse(self.body(), status_code=self.status, headers=self.headers or None)


def error_body(code: str, message_tr: str, message_en: str, **extra: Any) -> dict[str, Any]:
    return {"error": {"code": code, "message_tr": message_tr, "message_en": message_en, **extra}}


# ----------------------------------------------------------------------------- the fixed errors


def missing_token() -> ApiError:
    return ApiError(401, "missing_token",
                    "API anahtarı gerekli: 'Authorization: Bearer <anahtar>' başlığını gönderin.",
                    "An API token is required: send the header 'Authorization: Bearer <token>'.",
                    {"WWW-Authenticate": "Bearer"})


def invalid_token() -> ApiError:
    return ApiError(401, "invalid_token",
                    "API anahtarı geçersiz, süresi dolmuş ya da iptal edilmiş; ya da kullanıcı devre dışı.",
                    "The API token is invalid, expired or revoked, or its user is deactivated.",
                    {"WWW-Authenticate": 'Bearer error="invalid_token"'})


def too_many_attempts(retry_after: int) -> ApiError:
    minutes = max(1, -(-retry_after // 60))
    return ApiError(429, "too_many_attempts",
                    f"Bu adresten çok fazla geçersiz API anahtarı denendi. Yaklaşık {minutes} dakika sonra "
                    "yeniden deneyin.",
                    f"Too many invalid API tokens from this address. Try again in about {minutes} minute(s).",
                    {"Retry-After": str(retry_after)})


def admin_only() -> ApiError:
    return ApiError(403, "admin_only", "Bu işlem yalnızca yöneticiye açıktır.",
                    "Only an administrator may do this.")


def audit_only() -> ApiError:
    return ApiError(403, "audit_only", "Denetim kaydını yalnızca yönetici ve denetçi görebilir.",
                    "Only an administrator or an auditor may read the audit trail.")


def document_not_found() -> ApiError:
    """The same answer for a missing document and for one the caller may not read."""
    return ApiError(404, "document_not_found", "Belge bulunamadı ya da erişiminiz yok.",
                    "Document not found or not accessible.")


def page_not_found(message_tr: str) -> ApiError:
    """A readable document without that page image: no such page, or a Word file (sections, no
    pages); the Turkish text is the documents package's own sentence."""
    return ApiError(404, "page_not_found", message_tr,
                    "The document has no such page image (no such page, or a Word file: it has sections, not pages).")


def page_too_large(message_tr: str) -> ApiError:
    """A page that exists but is too large to draw even at the lowest resolution allowed: refused
    by arithmetic on its box, so asking again costs nothing; the Turkish text says how large the
    page is, the limits, and what to open instead."""
    return ApiError(422, "page_too_large", message_tr,
                    "The page is too large to draw as an image within the server's pixel budget "
                    "(RENDER_MAX_MEGAPIXELS at PAGE_IMAGE_MIN_DPI); read the page's text or download the document's file "
                    "instead.")


def job_not_found() -> ApiError:
    return ApiError(404, "job_not_found", "İş bulunamadı.", "Job not found.")


def question_not_found() -> ApiError:
    """The same answer for a missing question and for somebody else's."""
    return ApiError(404, "question_not_found",
                    "Soru bulunamadı ya da size ait değil; yalnızca kendi sorularınızı değerlendirebilirsiniz.",
                    "Question not found or not yours; you can rate only your own questions.")


def conversation_not_found() -> ApiError:
    """The same answer for a missing conversation, somebody else's, an expired one and text that is no id."""
    return ApiError(404, "conversation_not_found", "Sohbet bulunamadı ya da size ait değil.",
                    "Conversation not found or not yours.")


def models_unavailable() -> ApiError:
    return ApiError(503, "models_unavailable",
                    "Arama ya da cevap modeli şu anda kullanılamıyor; lütfen biraz sonra yeniden deneyin.",
                    "The retrieval or answer model is not available right now; please try again later.",
                    {"Retry-After": "30"})


def insufficient_storage(message_tr: str) -> ApiError:
    """Too little free disk for an upload (MIN_FREE_DISK_MB): the documents package's Turkish
    sentence, which names the free space and the floor."""
    return ApiError(507, "insufficient_storage", message_tr,
                    "The server's disk has too little free space for an upload (MIN_FREE_DISK_MB); nothing was "
                    "written. Try again once space is freed.")


def request_too_large(limit: int) -> ApiError:
    return ApiError(413, "request_too_large", f"İstek çok büyük: en fazla {_size(limit)} gönderilebilir.",
                    f"The request body is too large: at most {_size(limit)} may be sent.")


def headers_too_large(limit: int) -> ApiError:
    return ApiError(431, "request_headers_too_large",
                    f"İstek başlıkları çok büyük: toplam en fazla {_size(limit)} gönderilebilir "
                    "(Authorization başlığında yalnızca 'Bearer dyk_…' anahtarı olmalı).",
                    f"The request headers are too large: at most {_size(limit)} in total "
                    "(the Authorization header holds only 'Bearer dyk_…').")


def form_refused(detail: str, limits: Mapping[str, int], title_chars: int) -> ApiError:
    """A 400 for a form the multipart parser refused, naming the limit it hit.

    Starlette says which limit in its (English) message and raises a bare 400 with it; the
    prefixes below are its wording (starlette.formparsers), and the numbers are ours, not
    parsed back out of the text. An unknown message still gets both languages and the detail.
    """
    if detail.startswith("Too many files"):
        files = limits["max_files"]
        return ApiError(400, "too_many_files",
                        f"Bir istekte en fazla {files} dosya gönderilebilir; birden çok belgeyi ayrı isteklerle yükleyin.",
                        f"At most {files} file per request; upload several documents one request each.")
    if detail.startswith("Too many fields"):
        fields = limits["max_fields"]
        return ApiError(400, "too_many_fields",
                        f"Formda en fazla {fields} metin alanı olabilir (dosya hariç).",
                        f"The form may have at most {fields} text fields (the file not counted).")
    if detail.startswith(("Part exceeded maximum size", "Field exceeded maximum size")):
        part = _size(limits["max_part_size"])
        return ApiError(400, "form_field_too_large",
                        f"Bir form alanı en fazla {part} olabilir (başlık en fazla {title_chars} karakter).",
                        f"A form field may be at most {part} (a title at most {title_chars} characters).")
    return ApiError(400, "bad_form", "Form verisi okunamadı (multipart/form-data bekleniyor).",
                    f"The form could not be read (multipart/form-data expected): {detail}")


def database_unavailable() -> ApiError:
    return ApiError(503, "database_unavailable",
                    "Dayanak şu anda veritabanına ulaşamıyor. Lütfen biraz sonra yeniden deneyin.",
                    "Dayanak cannot reach its database right now. Please try again later.",
                    {"Retry-After": "10"})


# ----------------------------------------------------------------------------- validation errors

# pydantic error type -> (Turkish, English) sentence about one field; {field} and {ctx} are filled in.
_VALIDATION = {
    "missing": ("'{field}' alanı zorunlu.", "'{field}' is required."),
    "extra_forbidden": ("'{field}' diye bir alan yok.", "'{field}' is not a known field."),
    "string_type": ("'{field}' metin olmalı.", "'{field}' must be a string."),
    "int_type": ("'{field}' tam sayı olmalı.", "'{field}' must be an integer."),
    "int_parsing": ("'{field}' tam sayı olmalı.", "'{field}' must be an integer."),
    "int_from_float": ("'{field}' tam sayı olmalı.", "'{field}' must be an integer."),
    "bool_parsing": ("'{field}' true ya da false olmalı.", "'{field}' must be true or false."),
    "bool_type": ("'{field}' true ya da false olmalı.", "'{field}' must be true or false."),
    "literal_error": ("'{field}' şunlardan biri olmalı: {expected}.", "'{field}' must be one of: {expected}."),
    "greater_than_equal": ("'{field}' en az {ge} olmalı.", "'{field}' must be at least {ge}."),
    "less_than_equal": ("'{field}' en fazla {le} olmalı.", "'{field}' must be at most {le}."),
    "greater_than": ("'{field}' {gt} değerinden büyük olmalı.", "'{field}' must be greater than {gt}."),
    "string_too_long": ("'{field}' en fazla {max_length} karakter olabilir.",
                        "'{field}' may be at most {max_length} characters long."),
    "string_too_short": ("'{field}' boş olamaz.", "'{field}' must not be empty."),
    "too_long": ("'{field}' en fazla {max_length} öğe içerebilir.", "'{field}' may hold at most {max_length} items."),
    "feedback_value": ("'{field}' yalnızca 1 (yararlı) ya da -1 (yararsız) olabilir.",
                       "'{field}' must be 1 (useful) or -1 (not useful)."),
    "model_attributes_type": ("İstek gövdesi bir JSON nesnesi olmalı.", "The request body must be a JSON object."),
    "dict_type": ("İstek gövdesi bir JSON nesnesi olmalı.", "The request body must be a JSON object."),
    "json_invalid": ("İstek gövdesi geçerli bir JSON değil.", "The request body is not valid JSON."),
    "json_type": ("İstek gövdesi geçerli bir JSON değil.", "The request body is not valid JSON."),
}


def _field(loc: Sequence[Any]) -> str:
    parts = [str(p) for p in loc if p not in ("body", "query", "path", "header", "form")]
    return ".".join(parts) or "body"


def validation_error(errors: Sequence[Mapping[str, Any]]) -> ApiError:
    """A 422 naming every rejected field, in both languages."""
    turkish, english, fields = [], [], []
    for error in errors:
        field = _field(error.get("loc", ()))
        kind = str(error.get("type", ""))
        ctx = {k: v for k, v in (error.get("ctx") or {}).items()}
        pair = _VALIDATION.get(kind)
        if pair is None:
            turkish.append(f"'{field}' geçersiz.")
            english.append(f"'{field}': {error.get('msg', 'invalid value')}.")
        else:
            values = {"field": field, **{k: str(v) for k, v in ctx.items()}}
            turkish.append(pair[0].format_map(_Blank(values)).replace("' or '", "' ya da '"))
            english.append(pair[1].format_map(_Blank(values)))
        fields.append({"field": field, "type": kind})
    return _Validation(" ".join(dict.fromkeys(turkish)), " ".join(dict.fromkeys(english)), fields)


class _Blank(dict):
    def __missing__(self, key: str) -> str:
        return "?"


class _Validation(ApiError):
    def __init__(self, turkish: str, english: str, fields: list[dict]) -> None:
        super().__init__(422, "invalid_request", f"İstek geçersiz: {turkish}", f"Invalid request: {english}")
        self.fields = fields

    def body(self) -> dict[str, Any]:
        return error_body(self.code, self.message_tr, self.message_en, fields=self.fields)


# ----------------------------------------------------------------------------- handlers

_HTTP = {
    400: ("bad_request", "İstek okunamadı.", "The request could not be read."),
    404: ("not_found", "Böyle bir adres yok.", "No such endpoint."),
    405: ("method_not_allowed", "Bu adres bu HTTP yöntemini kabul etmiyor.", "This endpoint does not accept this method."),
    413: ("request_too_large", "İstek çok büyük.", "The request body is too large."),
    415: ("unsupported_media_type", "İstek gövdesinin türü desteklenmiyor.", "Unsupported request content type."),
}


def install(app: FastAPI) -> None:
    """Register the handlers that turn every failure into the one error shape."""

    @app.exception_handler(ApiError)
    async def _api_error(request: Request, exc: ApiError) -> JSONResponse:
        return JSONResponse(exc.body(), status_code=exc.status, headers=exc.headers or None)

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        return validation_error(exc.errors()).response()

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        limit = request.scope.get("starlette.max_body_size")
        if exc.status_code == 413 and isinstance(limit, int):
            return request_too_large(limit).response()
        code, turkish, english = _HTTP.get(exc.status_code, ("http_error", "İstek yerine getirilemedi.",
                                                             "The request could not be served."))
        return JSONResponse(error_body(code, turkish, english), status_code=exc.status_code,
                            headers=getattr(exc, "headers", None))

    @app.exception_handler(psycopg.Error)
    @app.exception_handler(psycopg_pool.PoolTimeout)
    @app.exception_handler(DatabaseError)
    async def _database(request: Request, exc: Exception) -> JSONResponse:
        # ragcore.db already removed the password from driver messages it raises; psycopg's own
        # errors about a running query do not carry the connection string.
        log.error("database error on %s %s: %s: %s", request.method, request.url.path, type(exc).__name__, exc)
        return database_unavailable().response()


def _size(limit: int) -> str:
    if limit >= 1024 * 1024:
        return f"{limit / 1024 / 1024:.0f} MB"
    return f"{limit / 1024:.0f} KB"
