"""Documents in and out: telling an upload's format by its bytes, PDF, Word (.docx), Excel (.xlsx)
and PowerPoint (.pptx) reading (every Office package checked under the same caps: `packages`),
OCR of scanned pages, article-aware chunking, titles, the upload pipeline, re-embedding, the
sentence windows the dense leg scores besides each chunk, the clean-up of orphaned uploads, the
role-scoped catalog, the admin's collections a question can be restricted to (`collections`,
`Scope`), a document's versions (`versions`: the kept ones, rolling back, the stored
document an upload looks like a revision of), the re-index of postings built from an older
lexical text (`lexical_index`) and the cited source pages (text, PDF and the page drawn as an image with the passage marked).
Every drawing of a page stays within a pixel budget (`rendering.PixelBudget`; `PageTooLarge`).
"""

from ragcore.documents.catalog import (
    DocumentNotFound,
    delete_document,
    document_chunks,
    document_file,
    find_document,
    get_document,
    list_documents,
    readable_chunks,
    readable_passages,
    set_document_roles,
    set_document_title,
    term_document_frequencies,
)
from ragcore.documents.chunking import (
    ARTICLE_RE,
    article_headings,
    chunk_pages,
    chunk_text,
    joined_text,
    lexical_texts,
    sentence_units,
)
from ragcore.documents.collections import DESCRIPTION_MAX_CHARS as COLLECTION_DESCRIPTION_MAX_CHARS
from ragcore.documents.collections import NAME_MAX_CHARS as COLLECTION_NAME_MAX_CHARS
from ragcore.documents.collections import (
    Collection,
    CollectionError,
    CollectionNotFound,
    Scope,
    checked_scope,
    collection_document_ids,
    create_collection,
    delete_collection,
    document_collection_ids,
    find_collection,
    list_collections,
    set_document_collections,
    update_collection,
)
from ragcore.documents.collections import set_members as set_collection_members
from ragcore.documents.formats import (
    DOCX,
    EXTENSIONS,
    KINDS_TEXT,
    MIME_TYPES,
    PDF,
    UPLOAD_EXTENSIONS,
    EncryptedExcel,
    EncryptedOffice,
    EncryptedPowerPoint,
    EncryptedWord,
    MismatchedExtension,
    OldOfficeFormat,
    OldWordFormat,
    UnsupportedFile,
    UnusableFile,
    check_name,
    count_unit,
    detect_format,
    hidden_note,
    locator_kind,
)
from ragcore.documents.ingest import (
    DISK_FULL,
    DiskSpaceLow,
    DuplicateDocument,
    IndexModelMismatch,
    IngestError,
    VersionBaseGone,
    check_free_space,
    check_size,
    check_upload,
    ingest_file,
    ingest_pdf,
    mark_ocr,
    read_upload,
    store_document,
    stored_path,
    validate_roles,
)
from ragcore.documents.lexical_index import reindex_stale
from ragcore.documents.ocr import PACKAGES as OCR_PACKAGES
from ragcore.documents.ocr import OcrLimits, OcrStatus, ocr_status
from ragcore.documents.ocr import read_pages as ocr_pages
from ragcore.documents.orphans import remove_orphan_files
from ragcore.documents.page_images import size_notes as page_size_notes
from ragcore.documents.pdf import (
    CorruptPdf,
    EmptyFile,
    NotAPdf,
    NoTextLayer,
    PdfError,
    extract_pages,
    normalize_page_text,
)
from ragcore.documents.reembed import reembed_all
from ragcore.documents.rendering import PageTooLarge, PixelBudget, RenderError
from ragcore.documents.sheets import (
    CorruptExcel,
    EmptyExcel,
    ExcelError,
    ExcelTooLarge,
    ExcelWithDoctype,
    MacroExcel,
    SheetLimits,
    SheetText,
    chunk_sheets,
    extract_sheets,
)
from ragcore.documents.slides import (
    CorruptPowerPoint,
    EmptyPowerPoint,
    MacroPowerPoint,
    PowerPointError,
    PowerPointTooLarge,
    PowerPointWithDoctype,
    SlideLimits,
    SlideText,
    chunk_slides,
    extract_slides,
)
from ragcore.documents.source_pages import (
    WORD_HAS_NO_PAGES,
    PageImage,
    PageNotFound,
    page_filename,
    page_image,
    page_pdf,
    read_page,
)
from ragcore.documents.titles import TitleError, clean_title, default_title, heading_title, turkish_title_case
from ragcore.documents.versions import Version, VersionError, list_versions, make_current, retire, revision_of
from ragcore.documents.windows import MAX_WINDOWS, Window, chunk_windows, document_windows, heading_span
from ragcore.documents.word import (
    CorruptWord,
    EmptyWord,
    NotAWordDocument,
    WordError,
    WordLimits,
    WordText,
    WordTooLarge,
    extract_sections,
    locate,
    section_label,
)

__all__ = [
    # catalog: Stored documents as each role may see them
    "delete_document",
    "document_chunks",
    "document_file",
    "DocumentNotFound",
    "find_document",
    "get_document",
    "list_documents",
    "readable_chunks",
    "readable_passages",
    "set_document_roles",
    "set_document_title",
    "term_document_frequencies",
    # chunking: text → chunks that keep articles whole
    "article_headings",
    "ARTICLE_RE",
    "chunk_pages",
    "chunk_text",
    "joined_text",
    "lexical_texts",
    "sentence_units",
    # collections: Collections
    "checked_scope",
    "Collection",
    "COLLECTION_DESCRIPTION_MAX_CHARS",
    "collection_document_ids",
    "COLLECTION_NAME_MAX_CHARS",
    "CollectionError",
    "CollectionNotFound",
    "create_collection",
    "delete_collection",
    "document_collection_ids",
    "find_collection",
    "list_collections",
    "Scope",
    "set_collection_members",
    "set_document_collections",
    "update_collection",
    # formats: Which kind of file an upload is
    "check_name",
    "count_unit",
    "detect_format",
    "DOCX",
    "EncryptedExcel",
    "EncryptedOffice",
    "EncryptedPowerPoint",
    "EncryptedWord",
    "EXTENSIONS",
    "hidden_note",
    "KINDS_TEXT",
    "locator_kind",
    "MIME_TYPES",
    "MismatchedExtension",
    "OldOfficeFormat",
    "OldWordFormat",
    "PDF",
    "UnsupportedFile",
    "UnusableFile",
    "UPLOAD_EXTENSIONS",
    # ingest: Upload
    "check_free_space",
    "check_size",
    "check_upload",
    "DISK_FULL",
    "DiskSpaceLow",
    "DuplicateDocument",
    "IndexModelMismatch",
    "ingest_file",
    "ingest_pdf",
    "IngestError",
    "mark_ocr",
    "read_upload",
    "store_document",
    "stored_path",
    "validate_roles",
    "VersionBaseGone",
    # lexical_index: re-indexing postings built from an older lexical text
    "reindex_stale",
    # ocr: Text of scanned pages
    "OCR_PACKAGES",
    "ocr_pages",
    "ocr_status",
    "OcrLimits",
    "OcrStatus",
    # orphans: Orphan clean-up
    "remove_orphan_files",
    # page_images: The cited page as it looks, with the quoted passage marked
    "page_size_notes",
    # pdf: PDF bytes → normalised text per page
    "CorruptPdf",
    "EmptyFile",
    "extract_pages",
    "normalize_page_text",
    "NotAPdf",
    "NoTextLayer",
    "PdfError",
    # reembed: Re-embedding
    "reembed_all",
    # rendering: PDF pages drawn as images
    "PageTooLarge",
    "PixelBudget",
    "RenderError",
    # sheets: Excel
    "chunk_sheets",
    "CorruptExcel",
    "EmptyExcel",
    "ExcelError",
    "ExcelTooLarge",
    "ExcelWithDoctype",
    "extract_sheets",
    "MacroExcel",
    "SheetLimits",
    "SheetText",
    # slides: PowerPoint
    "chunk_slides",
    "CorruptPowerPoint",
    "EmptyPowerPoint",
    "extract_slides",
    "MacroPowerPoint",
    "PowerPointError",
    "PowerPointTooLarge",
    "PowerPointWithDoctype",
    "SlideLimits",
    "SlideText",
    # source_pages: One page of a stored PDF, for the citation that points at it
    "page_filename",
    "page_image",
    "page_pdf",
    "PageImage",
    "PageNotFound",
    "read_page",
    "WORD_HAS_NO_PAGES",
    # titles: Document titles
    "clean_title",
    "default_title",
    "heading_title",
    "TitleError",
    "turkish_title_case",
    # versions: A document's versions (migration 024)
    "list_versions",
    "make_current",
    "retire",
    "revision_of",
    "Version",
    "VersionError",
    # windows: Sentence windows
    "chunk_windows",
    "document_windows",
    "heading_span",
    "MAX_WINDOWS",
    "Window",
    # word: Word
    "CorruptWord",
    "EmptyWord",
    "extract_sections",
    "locate",
    "NotAWordDocument",
    "section_label",
    "WordError",
    "WordLimits",
    "WordText",
    "WordTooLarge",
]
