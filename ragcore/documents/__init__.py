"""Documents in and out: PDF reading, OCR of scanned pages, article-aware chunking, titles, the
upload pipeline, re-embedding, the sentence windows the dense leg scores besides each chunk, the
clean-up of orphaned uploads, the role-scoped catalog and the cited source pages (text, PDF and
the page drawn as an image with the passage marked).
"""

from ragcore.documents import catalog, ingest, ocr, pdf, windows
from ragcore.documents.catalog import (
    DocumentNotFound,
    delete_document,
    document_chunks,
    document_file,
    find_document,
    get_document,
    list_documents,
    readable_chunks,
    set_document_roles,
    set_document_title,
    term_document_frequencies,
)
from ragcore.documents.chunking import (
    ARTICLE_RE,
    chunk_pages,
    chunk_text,
    joined_text,
    sentence_units,
)
from ragcore.documents.ingest import (
    DuplicateDocument,
    IngestError,
    check_size,
    ingest_pdf,
    store_document,
    stored_path,
    validate_roles,
)
from ragcore.documents.ocr import OcrStatus, ocr_status
from ragcore.documents.orphans import remove_orphan_files
from ragcore.documents.pdf import (
    CorruptPdf,
    EmptyFile,
    NotAPdf,
    NoTextLayer,
    PdfError,
    check_header,
    extract_pages,
)
from ragcore.documents.reembed import reembed_all
from ragcore.documents.source_pages import (
    PageImage,
    PageNotFound,
    page_filename,
    page_image,
    page_pdf,
    read_page,
)
from ragcore.documents.titles import (
    TitleError,
    clean_title,
    default_title,
    heading_title,
    turkish_title_case,
)
from ragcore.documents.windows import MAX_WINDOWS, Window, chunk_windows, document_windows

__all__ = [
    "ARTICLE_RE",
    "MAX_WINDOWS",
    "CorruptPdf",
    "DocumentNotFound",
    "DuplicateDocument",
    "EmptyFile",
    "IngestError",
    "NoTextLayer",
    "NotAPdf",
    "OcrStatus",
    "PageImage",
    "PageNotFound",
    "PdfError",
    "TitleError",
    "Window",
    "catalog",
    "check_header",
    "check_size",
    "chunk_pages",
    "chunk_text",
    "chunk_windows",
    "clean_title",
    "default_title",
    "delete_document",
    "document_chunks",
    "document_file",
    "document_windows",
    "extract_pages",
    "find_document",
    "get_document",
    "heading_title",
    "ingest",
    "ingest_pdf",
    "joined_text",
    "list_documents",
    "ocr",
    "ocr_status",
    "page_filename",
    "page_image",
    "page_pdf",
    "pdf",
    "read_page",
    "readable_chunks",
    "reembed_all",
    "remove_orphan_files",
    "sentence_units",
    "set_document_roles",
    "set_document_title",
    "store_document",
    "stored_path",
    "term_document_frequencies",
    "turkish_title_case",
    "validate_roles",
    "windows",
]
