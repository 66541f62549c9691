"""Small Word (.docx) files built with python-docx at test time (no binaries in the repository):
a regulation with headings, articles and automatically numbered paragraphs, and every kind
of bad input a .docx upload may be.
"""

from __future__ import annotations

import io
import zipfile
from datetime import UTC, datetime

import docx
from docx.oxml import OxmlElement
from docx.oxml.ns import qn

_FIXED_DATE = datetime(2024, 1, 1, tzinfo=UTC)

# (style, text): "H1"/"H2" headings, "N" a paragraph numbered "(n)" by Word itself (the text
# holds no number), "P" a plain paragraph. The same document as text is `REGULATION_TEXT`.
REGULATION = [
    ("Title", "ÖRNEK İŞ GÜVENLİĞİ YÖNETMELİĞİ"),
    ("H1", "BİRİNCİ BÖLÜM"),
    ("H2", "Amaç, Kapsam ve Tanımlar"),
    ("P", "Amaç"),
    ("P", "MADDE 1 – Bu Yönetmeliğin amacı, işyerlerinde iskele ve yüksekte çalışmada güvenliği sağlamaktır."),
    ("P", "Kapsam"),
    ("P", "MADDE 2 – Bu Yönetmelik, kamu ve özel sektöre ait bütün işyerlerine uygulanır."),
    ("N", "Ev hizmetlerinde çalışanlar kapsam dışındadır."),
    ("N", "Kendi nam ve hesabına çalışanlar da kapsam dışındadır."),
    ("H1", "İKİNCİ BÖLÜM"),
    ("H2", "Yükümlülükler"),
    ("P", "Baret kullanımı"),
    ("P", "MADDE 3 – İşveren, yüksekte çalışan her çalışana uygun baret ve emniyet kemeri verir."),
    ("N", "Baretler her vardiya başında görsel olarak kontrol edilir."),
    ("N", "Hasarlı baret derhal kullanımdan kaldırılır ve yenisiyle değiştirilir."),
    ("P", "Eğitim"),
    ("P", "MADDE 4 – Çalışanlara yılda en az bir kez düşmeye karşı koruma eğitimi verilir."),
]


def _numbering_id(document: docx.document.Document) -> str:
    """A "(%1)" decimal list in numbering.xml, like Word writes for numbered paragraphs."""
    numbering = document.part.numbering_part.element
    abstract = OxmlElement("w:abstractNum")
    abstract.set(qn("w:abstractNumId"), "90")
    level = OxmlElement("w:lvl")
    level.set(qn("w:ilvl"), "0")
    for tag, value in (("w:start", "1"), ("w:numFmt", "decimal"), ("w:lvlText", "(%1)")):
        child = OxmlElement(tag)
        child.set(qn("w:val"), value)
        level.append(child)
    abstract.append(level)
    numbering.insert(0, abstract)
    return "90"


def _number(paragraph: object, num_id: str) -> None:
    p_pr = paragraph._p.get_or_add_pPr()  # type: ignore[attr-defined]
    num_pr = OxmlElement("w:numPr")
    for tag, value in (("w:ilvl", "0"), ("w:numId", num_id)):
        child = OxmlElement(tag)
        child.set(qn("w:val"), value)
        num_pr.append(child)
    p_pr.append(num_pr)


def _new_list(document: docx.document.Document, abstract_id: str, num_id: str) -> None:
    """A w:num instance restarting the list at 1 (each article's paragraphs count from (1))."""
    num = OxmlElement("w:num")
    num.set(qn("w:numId"), num_id)
    ref = OxmlElement("w:abstractNumId")
    ref.set(qn("w:val"), abstract_id)
    num.append(ref)
    override = OxmlElement("w:lvlOverride")
    override.set(qn("w:ilvl"), "0")
    start = OxmlElement("w:startOverride")
    start.set(qn("w:val"), "1")
    override.append(start)
    num.append(override)
    document.part.numbering_part.element.append(num)


def build(blocks: list[tuple[str, str]], *, title: str | None = None) -> bytes:
    """A .docx of `blocks` (see REGULATION); each run of "N" paragraphs is its own list."""
    document = docx.Document()
    document.core_properties.created = _FIXED_DATE.replace(tzinfo=None)
    document.core_properties.modified = _FIXED_DATE.replace(tzinfo=None)
    document.core_properties.title = title or ""
    abstract = _numbering_id(document)
    lists, previous = 0, None
    for style, text in blocks:
        if style == "Title":
            document.add_heading(text, level=0)
        elif style in ("H1", "H2"):
            document.add_heading(text, level=int(style[1]))
        else:
            paragraph = document.add_paragraph(text)
            if style == "N":
                if previous != "N":
                    lists += 1
                    _new_list(document, abstract, str(100 + lists))
                _number(paragraph, str(100 + lists))
        previous = style
    return _saved(document)


def _saved(document: docx.document.Document) -> bytes:
    """The package's bytes, the same on every call: python-docx stamps each ZIP entry with the
    current time, so the entries are rewritten with a fixed one."""
    out = io.BytesIO()
    document.save(out)
    fixed = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(out.getvalue())) as source, zipfile.ZipFile(fixed, "w") as target:
        for item in source.infolist():
            entry = zipfile.ZipInfo(item.filename, date_time=(2024, 1, 1, 0, 0, 0))
            entry.compress_type = zipfile.ZIP_DEFLATED
            target.writestr(entry, source.read(item))
    return fixed.getvalue()


def regulation_docx() -> bytes:
    return build(REGULATION, title="Örnek İş Güvenliği Yönetmeliği")


def regulation_lines() -> list[str]:
    """The regulation as the PDF path would see its text: one line per paragraph, the numbers
    Word draws written out."""
    lines, count, previous = [], 0, None
    for style, text in REGULATION:
        count = count + 1 if style == "N" and previous == "N" else 1
        lines.append(f"({count}) {text}" if style == "N" else text)
        previous = style
    return lines


def with_table() -> bytes:
    document = docx.Document()
    document.add_heading("Kişisel koruyucu donanım listesi", level=1)
    table = document.add_table(rows=2, cols=2)
    table.cell(0, 0).text, table.cell(0, 1).text = "Donanım", "Değiştirme süresi"
    table.cell(1, 0).text, table.cell(1, 1).text = "Baret", "beş yıl"
    return _saved(document)


# --------------------------------------------------------------------------- bad inputs


def empty_docx() -> bytes:
    return build([])


def truncated_docx() -> bytes:
    data = regulation_docx()
    return data[: len(data) // 2]


def broken_xml_docx() -> bytes:
    """A valid ZIP whose word/document.xml is not XML."""
    source = zipfile.ZipFile(io.BytesIO(regulation_docx()))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as target:
        for item in source.infolist():
            data = b"<w:document><w:body><w:p>" if item.filename == "word/document.xml" else source.read(item)
            target.writestr(item, data)
    return out.getvalue()


def zip_without_document() -> bytes:
    """A ZIP that is no Word document (an .xlsx looks like this from afar)."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as target:
        target.writestr("[Content_Types].xml", "<Types/>")
        target.writestr("xl/workbook.xml", "<workbook/>")
    return out.getvalue()


def encrypted_docx() -> bytes:
    """What Word writes for a password-protected .docx: an OLE compound file (D0 CF 11 E0 …)
    whose directory names the EncryptedInfo and EncryptedPackage streams (the stand-in body
    is not a real encryption; the format check only needs what the bytes say they are)."""
    header = bytes.fromhex("D0CF11E0A1B11AE1") + b"\0" * 504
    directory = "EncryptionInfo".encode("utf-16-le") + b"\0" * 50 + "EncryptedPackage".encode("utf-16-le")
    return header + directory + bytes(range(256)) * 8


def old_doc() -> bytes:
    """An OLE file without an encrypted package: Word 97–2003's .doc."""
    header = bytes.fromhex("D0CF11E0A1B11AE1") + b"\0" * 504
    return header + "WordDocument".encode("utf-16-le") + bytes(range(256)) * 8


def renamed_binary() -> bytes:
    """A PNG's signature and some bytes: what a user gets by renaming an image to .docx."""
    return b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 16
