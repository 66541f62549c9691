"""Which kind of file an upload is, told by its bytes, never by its name.

Four kinds are read: PDF (`%PDF-` near the start) and the Office packages Word's .docx, Excel's
.xlsx and PowerPoint's .pptx (a ZIP, told apart by the main part it holds: word/document.xml,
xl/workbook.xml, ppt/presentation.xml). Everything else is refused here with a Turkish message
that says what the bytes are when we can tell: an OLE container (`D0 CF 11 E0 …`) is either a
password-protected Office file (the program encrypts the whole package into an
`EncryptedPackage` stream: "şifreli") or an old binary .doc/.xls/.ppt; the container does not
say which program wrote it, so the file name's suffix names it in the message. A renamed binary
gets the same refusal whatever its extension says.
"""

from __future__ import annotations

import io
import zipfile
from pathlib import PurePath

from ragcore.core import LOCATOR_PAGE, LOCATOR_ROWS, LOCATOR_SECTION, LOCATOR_SLIDE
from ragcore.documents.pdf import EmptyFile

PDF = "pdf"
DOCX = "docx"
XLSX = "xlsx"
PPTX = "pptx"
FORMATS = (PDF, DOCX, XLSX, PPTX)
OFFICE_FORMATS = (DOCX, XLSX, PPTX)  # ZIP packages of XML, checked by ragcore.documents.packages
EXTENSIONS = {PDF: ".pdf", DOCX: ".docx", XLSX: ".xlsx", PPTX: ".pptx"}
MIME_TYPES = {
    PDF: "application/pdf",
    DOCX: "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
    XLSX: "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
    PPTX: "application/vnd.openxmlformats-officedocument.presentationml.presentation",
}
# What the upload widgets offer (the content decides in the end).
UPLOAD_EXTENSIONS = ("pdf", "docx", "xlsx", "pptx")
# The kinds, as the upload's messages name them.
KINDS_TEXT = "PDF, Word (.docx), Excel (.xlsx) ya da PowerPoint (.pptx)"

_ZIP_MAGIC = b"PK\x03\x04"
_OLE_MAGIC = bytes.fromhex("D0CF11E0A1B11AE1")
# The stream name of an encrypted Office package, as OLE directory entries spell it (UTF-16LE).
_ENCRYPTED_PACKAGE = "EncryptedPackage".encode("utf-16-le")
# The main part each program writes; a package is told by which one it holds. A ZIP whose
# directory cannot be read is told by the folders of the names in its local headers (stored
# uncompressed), so a truncated .xlsx is refused as a broken Excel file, not as a broken Word file.
_MAIN_PARTS = {"word/document.xml": DOCX, "xl/workbook.xml": XLSX, "ppt/presentation.xml": PPTX}


class UnusableFile(ValueError):
    """An upload that cannot be used (not a PDF, nor a usable Office file); `str(exc)` is Turkish.

    (`ragcore.documents.pdf.PdfError` is the PDF reader's own family; ingest treats both alike.)
    """


class UnsupportedFile(UnusableFile):
    def __init__(self) -> None:
        super().__init__(f"Bu dosya {KINDS_TEXT} belgesi değil: adı ne olursa olsun içeriği bu biçimlerden biri "
                         "değil. Lütfen bu biçimlerden birinde yükleyin.")


class EncryptedOffice(UnusableFile):
    """An Office file encrypted with a password: an OLE container holding an `EncryptedPackage`
    (the container does not say which program wrote it; the file name's suffix names it)."""


class EncryptedWord(EncryptedOffice):
    def __init__(self) -> None:
        super().__init__("Word belgesi parola ile korunuyor; lütfen Word'de parolayı kaldırıp (Dosya › Bilgi › "
                         "Belgeyi Koru) şifresiz bir kopyasını yükleyin.")


class EncryptedExcel(EncryptedOffice):
    def __init__(self) -> None:
        super().__init__("Excel dosyası şifreli (parola ile korunuyor); okunamadı. Lütfen Excel'de parolayı kaldırıp "
                         "(Dosya › Bilgi › Çalışma Kitabını Koru) şifresiz bir kopyasını yükleyin.")


class EncryptedPowerPoint(EncryptedOffice):
    def __init__(self) -> None:
        super().__init__("PowerPoint sunusu şifreli (parola ile korunuyor); okunamadı. Lütfen PowerPoint'te parolayı "
                         "kaldırıp (Dosya › Bilgi › Sunuyu Koru) şifresiz bir kopyasını yükleyin.")


class OldWordFormat(UnusableFile):
    def __init__(self) -> None:
        super().__init__("Bu dosya eski Word biçiminde (.doc) ya da başka bir Office dosyası; yalnızca .docx "
                         "okunabiliyor. Lütfen Word'de “Farklı Kaydet › Word Belgesi (.docx)” ile kaydedip yükleyin.")


class OldOfficeFormat(UnusableFile):
    """The old binary .xls or .ppt (an OLE container without an encrypted package)."""


def _old_excel() -> OldOfficeFormat:
    return OldOfficeFormat("Bu dosya eski Excel biçiminde (.xls); yalnızca .xlsx okunabiliyor. Lütfen Excel'de "
                           "“Farklı Kaydet › Excel Çalışma Kitabı (.xlsx)” ile kaydedip yükleyin.")


def _old_powerpoint() -> OldOfficeFormat:
    return OldOfficeFormat("Bu dosya eski PowerPoint biçiminde (.ppt); yalnızca .pptx okunabiliyor. Lütfen "
                           "PowerPoint'te “Farklı Kaydet › PowerPoint Sunusu (.pptx)” ile kaydedip yükleyin.")


_EXCEL_SUFFIXES = (".xlsx", ".xlsm", ".xls", ".xlsb")
_POWERPOINT_SUFFIXES = (".pptx", ".pptm", ".ppt", ".ppsx")


def _ole_refusal(data: bytes, filename: str) -> UnusableFile:
    """An OLE container: encrypted (any Office program) or an old binary format; the file name's
    suffix says which program, since the container does not."""
    suffix = PurePath(filename).suffix.lower()
    if _ENCRYPTED_PACKAGE in data:
        if suffix in _EXCEL_SUFFIXES:
            return EncryptedExcel()
        return EncryptedPowerPoint() if suffix in _POWERPOINT_SUFFIXES else EncryptedWord()
    if suffix in _EXCEL_SUFFIXES:
        return _old_excel()
    return _old_powerpoint() if suffix in _POWERPOINT_SUFFIXES else OldWordFormat()


_FOLDERS = {"word/": DOCX, "xl/": XLSX, "ppt/": PPTX}


def _local_names(data: bytes) -> list[str]:
    """The member names in the local file headers (`PK 03 04`, the name's length at byte 26, the
    name from byte 30): what is left to read of a ZIP whose directory, at its end, is cut off."""
    names, start = [], data.find(_ZIP_MAGIC)
    while start >= 0:
        length = int.from_bytes(data[start + 26 : start + 28], "little")
        names.append(data[start + 30 : start + 30 + length].decode("utf-8", "replace"))
        start = data.find(_ZIP_MAGIC, start + 4)
    return names


def _package_format(data: bytes) -> str:
    """DOCX, XLSX or PPTX by the main part the ZIP holds (a broken ZIP: by the folder its first
    Office part sits in); a ZIP that holds none of them is left to the Word reader, whose refusal
    names the three kinds (`word.NotAWordDocument`)."""
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as package:
            names = set(package.namelist())
    except (zipfile.BadZipFile, zipfile.LargeZipFile, ValueError, OSError):
        folders = (_FOLDERS[name.split("/", 1)[0] + "/"] for name in _local_names(data)
                   if name.split("/", 1)[0] + "/" in _FOLDERS)
        return next(folders, DOCX)
    return next((file_format for name, file_format in _MAIN_PARTS.items() if name in names), DOCX)


def detect_format(data: bytes, filename: str = "") -> str:
    """`PDF`, `DOCX`, `XLSX` or `PPTX` from the bytes; raises `EmptyFile` or an `UnusableFile`.
    `filename` only names the program of an encrypted or old binary Office file."""
    if not data:
        raise EmptyFile()
    if data.startswith(_ZIP_MAGIC):
        return _package_format(data)
    if data.startswith(_OLE_MAGIC):
        raise _ole_refusal(data, filename)
    if b"%PDF-" in data[:1024]:
        return PDF
    raise UnsupportedFile()


def extension(file_format: str) -> str:
    """".pdf" / ".docx": the suffix a stored or staged file of this format carries."""
    return EXTENSIONS[file_format]


# What a document's `page_count` counts, in the words the documents page and the CLI print: a
# Word file has no pages, its count is of its sections (by their headings).
_COUNT_UNITS = {PDF: "sayfa", DOCX: "başlık", XLSX: "çalışma sayfası", PPTX: "slayt"}


def count_unit(file_format: str) -> str:
    """"sayfa" for a PDF, "başlık" for a .docx, "çalışma sayfası" for a .xlsx, "slayt" for a .pptx:
    the noun after a document's page count."""
    return _COUNT_UNITS[file_format]


# Which kind of place a citation of each format names (ragcore.core.Source.locator_kind).
_LOCATOR_KINDS = {PDF: LOCATOR_PAGE, DOCX: LOCATOR_SECTION, XLSX: LOCATOR_ROWS, PPTX: LOCATOR_SLIDE}


def locator_kind(file_format: str) -> str:
    """LOCATOR_PAGE for a PDF; a Word, Excel or PowerPoint file's chunks carry their own label."""
    return _LOCATOR_KINDS.get(file_format, LOCATOR_PAGE)


def hidden_note(file_format: str, hidden: list[str] | tuple[str, ...]) -> str:
    """"gizli olduğu için okunmayan sayfalar: Maaşlar, Eski" / "… slaytlar: 4, 9": what the author hid."""
    kind = "slaytlar" if file_format == PPTX else "sayfalar"
    return f"gizli olduğu için okunmayan {kind}: {', '.join(hidden)}"


_NAMES = {PDF: "bir PDF", DOCX: "bir Word (.docx) belgesi", XLSX: "bir Excel (.xlsx) dosyası",
          PPTX: "bir PowerPoint (.pptx) sunusu"}


class MismatchedExtension(UnusableFile):
    def __init__(self, suffix: str, file_format: str) -> None:
        super().__init__(f"Dosyanın adı “{suffix}” ile bitiyor ama içeriği {_NAMES[file_format]}. Yanlış dosya "
                         f"seçilmiş olabilir; doğruysa adını “{EXTENSIONS[file_format]}” ile bitecek biçimde "
                         "değiştirip yeniden yükleyin.")


def check_name(filename: str, file_format: str) -> None:
    """Refuse a name whose suffix claims another format than the content (a .docx saved as
    "x.pdf" would be downloaded as a broken PDF); a name with no known suffix is left to the content."""
    suffix = PurePath(filename).suffix.lower()
    if suffix in EXTENSIONS.values() and suffix != EXTENSIONS[file_format]:
        raise MismatchedExtension(suffix, file_format)
