"""Small Word (.docx) files built with python-docx at test time (no binaries in the repository):
a regulation with headings, articles and automatically numbered paragraphs, and every kind
of bad input a .docx upload may be.
"""

from __future__ import annotations

import io
import zipfile
from collections.abc import Iterator
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
    """A ZIP that is no Word, Excel or PowerPoint document (an OpenDocument .odt looks like this
    from afar; an .xlsx is told by its xl/workbook.xml now)."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as target:
        target.writestr("mimetype", "application/vnd.oasis.opendocument.text")
        target.writestr("content.xml", "<office:document-content/>")
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


# --------------------------------------------------------------------------- bombs (issue 36)
# The package of `empty_docx` with word/document.xml written from a generator, straight into the
# ZIP stream: a bomb's 120 MB of XML never sits in the test's memory.

_DOCUMENT_HEAD = (b'<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
                  b'<w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body>')
_DOCUMENT_TAIL = b"<w:sectPr/></w:body></w:document>"
_CHUNK = 1024 * 1024


def _paragraph(text: str) -> bytes:
    return f"<w:p><w:r><w:t>{text}</w:t></w:r></w:p>".encode()


def with_body(body: Iterator[bytes]) -> bytes:
    """`empty_docx`'s package with `body` (the body's XML, in pieces) as its document."""
    source = zipfile.ZipFile(io.BytesIO(empty_docx()))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as target:
        for item in source.infolist():
            entry = zipfile.ZipInfo(item.filename, date_time=(2024, 1, 1, 0, 0, 0))
            entry.compress_type = zipfile.ZIP_DEFLATED
            if item.filename != "word/document.xml":
                target.writestr(entry, source.read(item))
                continue
            with target.open(entry, "w") as stream:
                stream.write(_DOCUMENT_HEAD)
                for piece in body:
                    stream.write(piece)
                stream.write(_DOCUMENT_TAIL)
    return out.getvalue()


def _repeated(piece: bytes, total_bytes: int) -> Iterator[bytes]:
    block = piece * (_CHUNK // len(piece))
    for _ in range(total_bytes // len(block)):
        yield block


def empty_paragraph_bomb(megabytes: int = 120) -> bytes:
    """The probe's bomb: `megabytes` MB of `<w:p/>` (20 million paragraphs at 120 MB), a ~200 KB
    file under the 512 MB unpacked cap that python-docx turned into 3 GB of tree."""
    return with_body(_repeated(b"<w:p/>", megabytes * _CHUNK))


def sparse_paragraphs(empty: int = 100_000, every: int = 1000) -> bytes:
    """`empty` empty paragraphs with a text paragraph "Paragraf n." after every `every` of them,
    under a heading: the probe's 37 KB file that held the worker for 218 s."""
    def body() -> Iterator[bytes]:
        yield '<w:p><w:pPr><w:pStyle w:val="Heading1"/></w:pPr><w:r><w:t>BİRİNCİ BÖLÜM</w:t></w:r></w:p>'.encode()
        for n in range(1, empty // every + 1):
            yield b"<w:p/>" * every + _paragraph(f"Paragraf {n}.")
    return with_body(body())


def deeply_nested(depth: int) -> bytes:
    """A paragraph with text, then `depth` nested elements (Word never writes more than a few
    dozen levels; libxml2 stops at 256 without its huge-tree option)."""
    nest = b"<w:customXml>"
    return with_body(iter([_paragraph("MADDE 1 – Metin."), nest * depth, b"</w:customXml>" * depth]))


def attribute_bomb(paragraphs: int = 20_000, attributes: int = 200) -> bytes:
    """Few paragraphs, each with `attributes` attributes: 4 million nodes of tree (~1 GB in
    python-docx) under the paragraph cap, so only a count of attributes refuses it."""
    attrs = b" ".join(b'w:a%d="1"' % i for i in range(attributes))
    return with_body(iter([b"<w:p " + attrs + b"/>"] * paragraphs + [_paragraph("MADDE 1 – Metin.")]))


def with_doctype() -> bytes:
    """A document with a DOCTYPE that declares an entity and uses it in every paragraph (with
    entities left unresolved, each reference is a node of python-docx's tree)."""
    source = zipfile.ZipFile(io.BytesIO(empty_docx()))
    out = io.BytesIO()
    document = (b'<?xml version="1.0" encoding="UTF-8"?>\n<!DOCTYPE w:document [<!ENTITY e "metin">]>\n'
                + _DOCUMENT_HEAD.split(b"\n", 1)[1] + _paragraph("MADDE 1 – Metin.") + _paragraph("&e;&e;&e;") * 10
                + _DOCUMENT_TAIL)
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as target:
        for item in source.infolist():
            target.writestr(item, document if item.filename == "word/document.xml" else source.read(item))
    return out.getvalue()


def spanning_cell(span: int = 300_000_000) -> bytes:
    """A table whose one cell claims to span `span` grid columns: python-docx's `row.cells`
    gives that cell once per column."""
    cell = (f'<w:tbl><w:tr><w:tc><w:tcPr><w:gridSpan w:val="{span}"/></w:tcPr>'.encode()
            + _paragraph("Baret") + b"</w:tc></w:tr></w:tbl>")
    return with_body(iter([_paragraph("MADDE 1 – Donanım listesi."), cell]))


def merged_column(rows: int, label: str = "KKD") -> bytes:
    """A two-column table whose first column is one cell merged down `rows` rows (`label`),
    beside "Kalem 1" … "Kalem n"."""
    def tc(text: str, merge: str | None = None) -> bytes:
        props = b"" if merge is None else f"<w:tcPr><w:vMerge{merge}/></w:tcPr>".encode()
        return b"<w:tc>" + props + (_paragraph(text) if text else b"<w:p/>") + b"</w:tc>"

    def body() -> Iterator[bytes]:
        yield b"<w:tbl>"
        yield b"<w:tr>" + tc(label, ' w:val="restart"') + tc("Kalem 1") + b"</w:tr>"
        for n in range(2, rows + 1):
            yield b"<w:tr>" + tc("", "") + tc(f"Kalem {n}") + b"</w:tr>"
        yield b"</w:tbl>"
    return with_body(body())


def style_cycle() -> bytes:
    """Two paragraph styles based on each other (Word never writes such a loop) and a
    paragraph in one of them."""
    from docx.enum.style import WD_STYLE_TYPE

    document = docx.Document()
    first = document.styles.add_style("Döngü A", WD_STYLE_TYPE.PARAGRAPH)
    second = document.styles.add_style("Döngü B", WD_STYLE_TYPE.PARAGRAPH)
    first.base_style, second.base_style = second, first
    document.add_paragraph("MADDE 1 – Bu paragrafın biçemi kendi kendine dayanıyor.", style=first)
    return _saved(document)


def numbered_from(start: int, fmt: str, texts: list[str]) -> bytes:
    """`texts` as one list numbered "<n>." in format `fmt` starting at `start`."""
    document = docx.Document()
    abstract = OxmlElement("w:abstractNum")
    abstract.set(qn("w:abstractNumId"), "91")
    level = OxmlElement("w:lvl")
    level.set(qn("w:ilvl"), "0")
    for tag, value in (("w:start", str(start)), ("w:numFmt", fmt), ("w:lvlText", "%1.")):
        child = OxmlElement(tag)
        child.set(qn("w:val"), value)
        level.append(child)
    abstract.append(level)
    numbering = document.part.numbering_part.element
    numbering.insert(0, abstract)
    num = OxmlElement("w:num")
    num.set(qn("w:numId"), "910")
    ref = OxmlElement("w:abstractNumId")
    ref.set(qn("w:val"), "91")
    num.append(ref)
    numbering.append(num)
    for text in texts:
        _number(document.add_paragraph(text), "910")
    return _saved(document)
