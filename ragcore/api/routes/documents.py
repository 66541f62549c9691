"""Documents and jobs: the caller's role's list, one document, its file, a cited page as an image,
its versions; upload, a new version, making a kept version current again, job status, delete (admin).

Reads go through `ragcore.documents.catalog` (the role predicate in every query), so a document the
caller may not read is answered exactly like one that does not exist: the same 404 body. Documents
and jobs are named by their public ids (random UUIDs); any other text in the path, a sequential
key like `17` included, is an unknown id and gets that 404 too, never a 422 about its format.
An upload is a background job (`ragcore.jobs.submit_ingest`, the one the Dokümanlar page
queues): the request returns 202 with the job at once. The request body is limited to
MAX_UPLOAD_MB (plus multipart overhead) while it streams in, and the file is checked — size,
roles, the file's format by its content (a PDF's header, a Word package's document part) — before anything is staged, so a refused upload writes nothing; and
the body is read only once the token is known to be an admin's and the disk has room (507 below
MIN_FREE_DISK_MB).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

from fastapi import APIRouter, Query, Request, Response
from fastapi import Path as PathParam
from fastapi.responses import FileResponse
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import FormData, UploadFile
from starlette.exceptions import HTTPException as StarletteHTTPException

from ragcore import documents as docs
from ragcore import jobs
from ragcore.access import role_names
from ragcore.api import errors
from ragcore.api.deps import Admin, Context, CurrentUser
from ragcore.api.schemas import (
    ChunkOut,
    Deleted,
    DocumentDetail,
    DocumentList,
    DocumentOut,
    DocumentVersionList,
    DocumentVersionOut,
    ErrorResponse,
    JobOut,
)
from ragcore.core import Document, Settings, User, sanitize
from ragcore.documents import (
    MIME_TYPES,
    CorruptExcel,
    CorruptPdf,
    CorruptPowerPoint,
    CorruptWord,
    DiskSpaceLow,
    EmptyFile,
    EncryptedExcel,
    EncryptedPowerPoint,
    EncryptedWord,
    ExcelTooLarge,
    ExcelWithDoctype,
    IngestError,
    MacroExcel,
    MacroPowerPoint,
    MismatchedExtension,
    NotAWordDocument,
    OldOfficeFormat,
    OldWordFormat,
    PageNotFound,
    PageTooLarge,
    PdfError,
    PowerPointTooLarge,
    PowerPointWithDoctype,
    UnsupportedFile,
    UnusableFile,
    VersionError,
    WordTooLarge,
    check_free_space,
    check_upload,
    list_versions,
    make_current,
)
from ragcore.documents import page_image as page_image_of

router = APIRouter(tags=["documents"])
# Its own router: the app gives it the upload-sized body limit.
upload_router = APIRouter(tags=["documents"])

MULTIPART_OVERHEAD = 1024 * 1024  # boundaries, headers and the small fields around the file
MAX_TITLE_CHARS = 500
MAX_PASSAGE_CHARS = 4000  # a cited chunk's text, with room
UPLOAD_FORM_LIMITS = {"max_files": 1, "max_fields": 20, "max_part_size": 64 * 1024}
Id = Annotated[str, PathParam(description="public id (a random UUID)")]
NOT_FOUND = {404: {"model": ErrorResponse}, 401: {"model": ErrorResponse}}


def upload_limit(settings: Settings) -> int:
    return settings.max_upload_bytes + MULTIPART_OVERHEAD


def job_out(job: jobs.Job, live_workers: int | None = None) -> JobOut:
    kind = jobs.KINDS.get(job.kind)
    data = job.as_dict()
    return JobOut(
        job_id=job.public_id, kind=job.kind, label=job.label, status=job.status, stage=job.stage, done=job.done,
        total=job.total, progress=round(kind.fraction(job), 4) if kind else 0.0, seconds_left=data["seconds_left"],
        attempts=job.attempts, created_by=job.created_by, created_at=job.created_at, started_at=job.started_at,
        finished_at=job.finished_at, cancel_requested=data["cancel_requested"], result=job.result, error=job.error,
        live_workers=live_workers,
    )


def _readable(context: Context, document_id: str, role: str) -> Document:
    doc = docs.find_document(context.database(), document_id, role)
    if doc is None:
        raise errors.document_not_found()
    return doc


@router.get("/v1/documents", response_model=DocumentList, summary="Documents the caller's role may read",
            responses={401: {"model": ErrorResponse}})
def list_documents(user: CurrentUser, context: Context) -> DocumentList:
    return DocumentList(documents=[DocumentOut.of(d) for d in docs.list_documents(context.database(), user.reader)])


@router.get("/v1/documents/{document_id}", response_model=DocumentDetail, responses=NOT_FOUND,
            summary="One document (404 when missing or not readable); ?chunks=true adds its text")
def get_document(document_id: Id, user: CurrentUser, context: Context,
                 chunks: Annotated[bool, Query(description="include the chunks' text")] = False) -> DocumentDetail:
    doc = _readable(context, document_id, user.reader)
    detail = DocumentDetail(**DocumentOut.of(doc).model_dump())
    if chunks:
        try:
            found = docs.document_chunks(context.database(), doc.id, user.reader)
        except docs.DocumentNotFound:  # deleted or revoked in between
            raise errors.document_not_found() from None
        detail.chunk_texts = [ChunkOut(ordinal=c.ordinal, page_start=c.page_start, page_end=c.page_end,
                                       article=c.article, locator=c.locator, text=c.text) for c in found]
    return detail


@router.get("/v1/documents/{document_id}/file", response_class=FileResponse, responses=NOT_FOUND,
            summary="Download the stored file, PDF, .docx, .xlsx or .pptx (404 when missing or not readable)")
def download(document_id: Id, user: CurrentUser, context: Context) -> FileResponse:
    doc = _readable(context, document_id, user.reader)
    path = docs.document_file(context.settings, doc, user.reader)
    if path is None:
        raise errors.document_not_found()
    return FileResponse(path, media_type=MIME_TYPES[doc.file_format], filename=doc.filename)


@router.get("/v1/documents/{document_id}/pages/{number}/image", response_class=Response, responses={
    **NOT_FOUND, 422: {"model": ErrorResponse, "description": "`page_too_large`: the page is too large to draw"},
    200: {"content": {"image/png": {}}, "description": "the page as PNG"}},
    summary="A PDF page drawn as PNG, `passage` marked on it (404 when missing or not readable, 422 when too large)")
def page_image(document_id: Id, number: Annotated[int, PathParam(ge=1, description="1-based page, as cited")],
               user: CurrentUser, context: Context,
               passage: Annotated[str, Query(max_length=MAX_PASSAGE_CHARS,
                                             description="text to mark (a source's text)")] = "") -> Response:
    """The app's "Sayfayı aç" image over the same service function and role check
    (`ragcore.documents.page_image`); a Word file has none (404 `page_not_found`, saying what to
    read instead), and a page too large to draw even at PAGE_IMAGE_MIN_DPI neither (422
    `page_too_large`, told from the page's box before anything is drawn)."""
    doc = _readable(context, document_id, user.reader)
    try:
        image = page_image_of(context.settings, doc, number, user.reader, sanitize(passage))
    except docs.DocumentNotFound:  # revoked in between: still "not found", never a word about the page
        raise errors.document_not_found() from None
    except PageTooLarge as exc:
        raise errors.page_too_large(str(exc)) from None
    except PageNotFound as exc:
        raise errors.page_not_found(str(exc)) from None
    return Response(image.png, media_type="image/png", headers={"X-Marked-Words": str(image.marked)})


@router.delete("/v1/documents/{document_id}", response_model=Deleted, summary="Delete a document (admin)",
               responses={**NOT_FOUND, 403: {"model": ErrorResponse}})
def delete(document_id: Id, admin: Admin, context: Context) -> Deleted:
    found = _readable(context, document_id, admin.reader)
    try:
        doc = docs.delete_document(context.database(), context.settings, found.id)
    except docs.DocumentNotFound:  # deleted in between
        raise errors.document_not_found() from None
    return Deleted(deleted=DocumentOut.of(doc))


@router.get("/v1/documents/{document_id}/versions", response_model=DocumentVersionList, responses=NOT_FOUND,
            summary="The document's kept versions, newest first (any version's id names the document)")
def versions(document_id: Id, user: CurrentUser, context: Context) -> DocumentVersionList:
    doc = _readable(context, document_id, user.reader)
    try:
        found = list_versions(context.database(), doc.id, user.reader)
    except docs.DocumentNotFound:  # deleted or revoked in between
        raise errors.document_not_found() from None
    return DocumentVersionList(versions=[
        DocumentVersionOut(document_id=v.public_id, version=v.version_no, current=v.is_current, label=v.label,
                           uploaded_at=v.uploaded_at, uploaded_by=v.uploaded_by, filename=v.filename,
                           chunks=v.chunk_count, retired_at=v.retired_at) for v in found])


@router.post("/v1/documents/{document_id}/current", response_model=DocumentOut,
             responses={**NOT_FOUND, 403: {"model": ErrorResponse}, 409: {"model": ErrorResponse}},
             summary="Make this kept version the document's current one: a roll-back (admin); 409 when it already is")
def set_current(document_id: Id, admin: Admin, context: Context) -> DocumentOut:
    doc = _readable(context, document_id, admin.reader)
    try:
        return DocumentOut.of(make_current(context.database(), doc.id))
    except docs.DocumentNotFound:
        raise errors.document_not_found() from None
    except VersionError as exc:
        raise errors.ApiError(409, "already_current", str(exc), "This version is already the current one.") from None


@router.get("/v1/jobs/{job_id}", response_model=JobOut, summary="A background job's status and progress (admin)",
            responses={404: {"model": ErrorResponse}, 403: {"model": ErrorResponse}})
def get_job(job_id: Id, admin: Admin, context: Context) -> JobOut:
    try:
        job = jobs.find_job(context.database(), job_id)
    except jobs.JobNotFound:
        raise errors.job_not_found() from None
    return job_out(job, jobs.live_workers(context.database(), context.settings) if job.active else None)


# ----------------------------------------------------------------------------- upload


def parse_roles(values: list[str], known: tuple[str, ...]) -> list[str]:
    """Repeated `roles` fields, each possibly comma-separated; every one must be a known role
    (`known`: the roles registry's names)."""
    roles = list(dict.fromkeys(r.strip().lower() for value in values for r in value.split(",") if r.strip()))
    if not roles:
        raise errors.ApiError(422, "roles_required",
                              "En az bir rol seçilmeli: belgeyi kimlerin okuyabileceği boş bırakılamaz.",
                              "At least one role is required: who may read the document cannot be left empty.")
    unknown = [r for r in roles if r not in known]
    if unknown:
        raise errors.ApiError(422, "unknown_role",
                              f"Bilinmeyen rol: {', '.join(unknown)}. Geçerli roller: {', '.join(known)}.",
                              f"Unknown role: {', '.join(unknown)}. Valid roles: {', '.join(known)}.")
    return roles


_FILE_ERRORS = {
    EmptyFile: (422, "empty_file", "The file is empty (0 bytes)."),
    UnsupportedFile: (415, "unsupported_file",
                      "The file is none of PDF, Word .docx, Excel .xlsx, PowerPoint .pptx (whatever its name says)."),
    CorruptPdf: (422, "corrupt_pdf", "The PDF is damaged or incomplete (its end is missing)."),
    CorruptWord: (422, "corrupt_docx", "The Word file is damaged or incomplete."),
    NotAWordDocument: (415, "not_a_docx", "The file is a ZIP package but not a Word, Excel or PowerPoint document."),
    EncryptedWord: (422, "encrypted_docx", "The Word file is password-protected; upload an unprotected copy."),
    OldWordFormat: (415, "old_word_format", "The file is an old binary .doc (or another OLE file); save it as .docx."),
    MismatchedExtension: (415, "extension_mismatch", "The file name's extension claims the other format than its content."),
    WordTooLarge: (413, "docx_too_large", "The Word file unpacks to more than DOCX_MAX_UNPACKED_MB."),
    CorruptExcel: (422, "corrupt_xlsx", "The Excel file is damaged or incomplete."),
    EncryptedExcel: (422, "encrypted_xlsx", "The Excel file is encrypted (password-protected); upload an unprotected copy."),
    MacroExcel: (415, "macro_xlsx", "The Excel file holds macros (.xlsm); save it as .xlsx without macros."),
    ExcelTooLarge: (413, "xlsx_too_large", "The Excel file is past a cap (DOCX_MAX_UNPACKED_MB, DOCX_MAX_ELEMENTS, "
                    "XLSX_MAX_ROWS, XLSX_MAX_CELLS; the Turkish message names it)."),
    ExcelWithDoctype: (422, "xlsx_doctype", "The Excel file holds a DOCTYPE declaration, which Excel never writes."),
    CorruptPowerPoint: (422, "corrupt_pptx", "The PowerPoint file is damaged or incomplete."),
    EncryptedPowerPoint: (422, "encrypted_pptx", "The PowerPoint file is encrypted (password-protected); upload an "
                          "unprotected copy."),
    MacroPowerPoint: (415, "macro_pptx", "The PowerPoint file holds macros (.pptm); save it as .pptx without macros."),
    PowerPointTooLarge: (413, "pptx_too_large", "The PowerPoint file is past a cap (DOCX_MAX_UNPACKED_MB, "
                         "DOCX_MAX_ELEMENTS, PPTX_MAX_SLIDES; the Turkish message names it)."),
    PowerPointWithDoctype: (422, "pptx_doctype", "The PowerPoint file holds a DOCTYPE declaration, which PowerPoint "
                            "never writes."),
    OldOfficeFormat: (415, "old_office_format", "The file is an old binary .xls or .ppt; save it as .xlsx or .pptx."),
}


def _checked_file(file: UploadFile, settings: Settings) -> bytes:
    size = file.size
    if size is None:
        file.file.seek(0, 2)
        size = file.file.tell()
        file.file.seek(0)
    if size > settings.max_upload_bytes:
        raise errors.ApiError(413, "file_too_large",
                              f"Dosya çok büyük: {size / 1024 / 1024:.1f} MB; en fazla {settings.max_upload_mb} MB "
                              "yüklenebilir (MAX_UPLOAD_MB).",
                              f"The file is too large: {size / 1024 / 1024:.1f} MB; at most "
                              f"{settings.max_upload_mb} MB (MAX_UPLOAD_MB).")
    data = file.file.read()
    try:
        check_upload(data, Path(file.filename or "").name, settings)
    except (PdfError, UnusableFile) as exc:
        status, code, english = _FILE_ERRORS.get(type(exc), (422, "bad_file", "The file cannot be used."))
        raise errors.ApiError(status, code, str(exc), english) from None
    return data


UPLOAD_SCHEMA = {
    "required": True,
    "content": {"multipart/form-data": {"schema": {
        "type": "object", "required": ["file", "roles"],
        "properties": {
            "file": {"type": "string", "format": "binary",
                     "description": "the PDF, Word .docx, Excel .xlsx or PowerPoint .pptx (at most MAX_UPLOAD_MB; "
                                    "the content decides which)"},
            "roles": {"type": "array", "items": {"type": "string", "pattern": "^[a-z][a-z0-9_]*$", "maxLength": 40},
                      "description": "roles that may read it (repeat the field, or separate with commas)"},
            "title": {"type": "string", "maxLength": MAX_TITLE_CHARS, "description": "shown in citations"},
        },
    }}},
}


def _form_value(form: FormData, name: str) -> list[str]:
    values = form.getlist(name)
    if any(not isinstance(v, str) for v in values):
        raise errors.validation_error([{"loc": ("body", name), "type": "string_type"}])
    return values  # type: ignore[return-value]


def _upload_fields(form: FormData, *, roles_required: bool = True) -> tuple[UploadFile, list[str], str | None]:
    files = form.getlist("file")
    if not files:
        raise errors.validation_error([{"loc": ("body", "file"), "type": "missing"}])
    if not isinstance(files[0], UploadFile):
        raise errors.ApiError(422, "invalid_request", "İstek geçersiz: 'file' bir dosya olmalı.",
                              "Invalid request: 'file' must be a file part.")
    roles = _form_value(form, "roles")
    if not roles and roles_required:
        raise errors.validation_error([{"loc": ("body", "roles"), "type": "missing"}])
    titles = _form_value(form, "title")
    title = titles[0] if titles else None
    if title is not None and len(title) > MAX_TITLE_CHARS:
        raise errors.validation_error([{"loc": ("body", "title"), "type": "string_too_long",
                                        "ctx": {"max_length": MAX_TITLE_CHARS}}])
    return files[0], roles, title


def _queue_upload(context: Context, admin: User, file: UploadFile, roles: list[str], title: str | None,
                  new_version_of: str | None = None) -> jobs.Job:
    base = _readable(context, new_version_of, admin.reader).id if new_version_of is not None else None
    allowed = parse_roles(roles, role_names(context.database())) if roles or base is None else []
    data = _checked_file(file, context.settings)
    try:
        return jobs.submit_ingest(context.database(), context.settings, data,
                                  filename=Path(file.filename or "").name or "belge.pdf", roles=allowed,
                                  title=(title or "").strip() or None, created_by=admin.username,
                                  new_version_of=base)
    except jobs.JobError as exc:
        raise errors.ApiError(422, "upload_refused", str(exc), "The upload was refused (see message_tr).") from None


@upload_router.post(
    "/v1/documents", status_code=202, response_model=JobOut, openapi_extra={"requestBody": UPLOAD_SCHEMA},
    summary="Upload a PDF, .docx, .xlsx or .pptx (admin): multipart `file`, `roles` (repeat or comma-separate), optional `title`; "
            "202 with the background job",
    responses={401: {"model": ErrorResponse}, 403: {"model": ErrorResponse}, 413: {"model": ErrorResponse},
               415: {"model": ErrorResponse}, 422: {"model": ErrorResponse}, 400: {"model": ErrorResponse},
               507: {"model": ErrorResponse}},
)
async def upload(request: Request, admin: Admin, context: Context, response: Response) -> JobOut:
    """The body is read only after the token was checked and found to be an admin's: an
    anonymous or non-admin caller cannot make the server receive (and spool) an upload; and
    only while the disk has room for it (MIN_FREE_DISK_MB)."""
    return await _upload(request, admin, context, response)


VERSION_UPLOAD_SCHEMA = {**UPLOAD_SCHEMA, "content": {"multipart/form-data": {"schema": {
    **UPLOAD_SCHEMA["content"]["multipart/form-data"]["schema"], "required": ["file"],
    "properties": {**UPLOAD_SCHEMA["content"]["multipart/form-data"]["schema"]["properties"],
                   "roles": {"type": "array",
                             "items": {"type": "string", "pattern": "^[a-z][a-z0-9_]*$", "maxLength": 40},
                             "description": "roles that may read the new version (default: the current version's)"},
                   "title": {"type": "string", "maxLength": MAX_TITLE_CHARS,
                             "description": "default: the current version's title"}},
}}}}


@upload_router.post(
    "/v1/documents/{document_id}/versions", status_code=202, response_model=JobOut,
    openapi_extra={"requestBody": VERSION_UPLOAD_SCHEMA},
    summary="Upload a new version of a document (admin): multipart `file`, optional `roles` and `title` (the "
            "current version's by default); 202 with the background job, which switches the new version in when "
            "it is stored",
    responses={**NOT_FOUND, 403: {"model": ErrorResponse}, 413: {"model": ErrorResponse},
               415: {"model": ErrorResponse}, 422: {"model": ErrorResponse}, 400: {"model": ErrorResponse},
               507: {"model": ErrorResponse}},
)
async def upload_version(document_id: Id, request: Request, admin: Admin, context: Context,
                         response: Response) -> JobOut:
    """As `upload`, for the next version of `document_id` (any of its versions' ids)."""
    return await _upload(request, admin, context, response, new_version_of=document_id)


async def _upload(request: Request, admin: User, context: Context, response: Response,
                  new_version_of: str | None = None) -> JobOut:
    try:
        check_free_space(context.settings)
    except DiskSpaceLow as exc:
        raise errors.insufficient_storage(str(exc)) from None
    except IngestError as exc:  # the free space could not be measured
        raise errors.ApiError(422, "upload_refused", str(exc), "The upload was refused (see message_tr).") from None
    try:
        form = await request.form(**UPLOAD_FORM_LIMITS)
    except StarletteHTTPException as exc:  # Starlette's bare 400 for a refused multipart body
        if exc.status_code != 400:
            raise
        raise errors.form_refused(str(exc.detail), UPLOAD_FORM_LIMITS, MAX_TITLE_CHARS) from None
    try:
        file, roles, title = _upload_fields(form, roles_required=new_version_of is None)
        job = await run_in_threadpool(_queue_upload, context, admin, file, roles, title, new_version_of)
        workers = await run_in_threadpool(jobs.live_workers, context.database(), context.settings)
    finally:
        await form.close()
    response.headers["Location"] = f"/v1/jobs/{job.public_id}"
    return job_out(job, workers)
