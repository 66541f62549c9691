"""Which kind of file an upload is, told by its bytes, never by its name.

Two kinds are read: PDF (`%PDF-` near the start) and Word's .docx (a ZIP package; whether it
holds `word/document.xml` is `ragcore.documents.word`'s check). Everything else is refused here
with a Turkish message that says what the bytes are when we can tell: an OLE container
(`D0 CF 11 E0 …`) is either a password-protected .docx (Word encrypts the whole package into an
`EncryptedPackage` stream) or the old binary .doc format. A renamed binary gets the same
refusal whatever its extension says.
"""

from __future__ import annotations

from pathlib import PurePath

from ragcore.documents.pdf import EmptyFile

PDF = "pdf"
DOCX = "docx"
FORMATS = (PDF, DOCX)
EXTENSIONS = {PDF: ".pdf", DOCX: ".docx"}
MIME_TYPES = {
    PDF: "application/pdf",
    DOCX: "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
}
# What the upload widgets offer (the content decides in the end).
UPLOAD_EXTENSIONS = ("pdf", "docx")

_ZIP_MAGIC = b"PK\x03\x04"
_OLE_MAGIC = bytes.fromhex("D0CF11E0A1B11AE1")
# The stream name of an encrypted Office package, as OLE directory entries spell it (UTF-16LE).
_ENCRYPTED_PACKAGE = "EncryptedPackage".encode("utf-16-le")


class UnusableFile(ValueError):
    """An upload that is neither a usable PDF nor a usable Word file; `str(exc)` is Turkish.

    (`ragcore.documents.pdf.PdfError` is the PDF reader's own family; ingest treats both alike.)
    """


class UnsupportedFile(UnusableFile):
    def __init__(self) -> None:
        super().__init__("Bu dosya bir PDF ya da Word (.docx) belgesi değil: adı ne olursa olsun içeriği bu iki "
                         "biçimden biri değil. Lütfen PDF ya da .docx yükleyin.")


class EncryptedWord(UnusableFile):
    def __init__(self) -> None:
        super().__init__("Word belgesi parola ile korunuyor; lütfen Word'de parolayı kaldırıp (Dosya › Bilgi › "
                         "Belgeyi Koru) şifresiz bir kopyasını yükleyin.")


class OldWordFormat(UnusableFile):
    def __init__(self) -> None:
        super().__init__("Bu dosya eski Word biçiminde (.doc) ya da başka bir Office dosyası; yalnızca .docx "
                         "okunabiliyor. Lütfen Word'de “Farklı Kaydet › Word Belgesi (.docx)” ile kaydedip yükleyin.")


def detect_format(data: bytes) -> str:
    """`PDF` or `DOCX` from the first bytes; raises `EmptyFile` or an `UnusableFile`."""
    if not data:
        raise EmptyFile()
    if data.startswith(_ZIP_MAGIC):
        return DOCX
    if data.startswith(_OLE_MAGIC):
        raise EncryptedWord() if _ENCRYPTED_PACKAGE in data else OldWordFormat()
    if b"%PDF-" in data[:1024]:
        return PDF
    raise UnsupportedFile()


def extension(file_format: str) -> str:
    """".pdf" / ".docx": the suffix a stored or staged file of this format carries."""
    return EXTENSIONS[file_format]


# What a document's `page_count` counts, in the words the documents page and the CLI print: a
# Word file has no pages, its count is of its sections (by their headings).
_COUNT_UNITS = {PDF: "sayfa", DOCX: "başlık"}


def count_unit(file_format: str) -> str:
    """"sayfa" for a PDF, "başlık" for a .docx: the noun after a document's page count."""
    return _COUNT_UNITS[file_format]


_NAMES = {PDF: "bir PDF", DOCX: "bir Word (.docx) belgesi"}


class MismatchedExtension(UnusableFile):
    def __init__(self, suffix: str, file_format: str) -> None:
        super().__init__(f"Dosyanın adı “{suffix}” ile bitiyor ama içeriği {_NAMES[file_format]}. Yanlış dosya "
                         f"seçilmiş olabilir; doğruysa adını “{EXTENSIONS[file_format]}” ile bitecek biçimde "
                         "değiştirip yeniden yükleyin.")


def check_name(filename: str, file_format: str) -> None:
    """Refuse a name whose suffix claims the other format than the content (a .docx saved as
    "x.pdf" would be downloaded as a broken PDF); a name with no known suffix is left to the content."""
    suffix = PurePath(filename).suffix.lower()
    if suffix in EXTENSIONS.values() and suffix != EXTENSIONS[file_format]:
        raise MismatchedExtension(suffix, file_format)
