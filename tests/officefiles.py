"""Excel (.xlsx) and PowerPoint (.pptx) files built at test time: with openpyxl and python-pptx
for the good ones, and by rewriting a package's XML for the hostile ones (bombs, macros, broken
parts). Nothing is read from disk."""

from __future__ import annotations

import functools
import io
import zipfile

import openpyxl
import pptx
from pptx.util import Inches, Pt

MAIN = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"
SHEET1 = "xl/worksheets/sheet1.xml"

STAFF_HEADER = ["Sicil", "Ad Soyad", "Departman", "Yıllık izin (gün)"]
# Row 27 of "Personel" (the header is row 1; rows 12 and 13 are left empty).
FORKLIFT_ROW = 27


def _staff_rows() -> list[list]:
    rows = []
    for n in range(1, 41):
        if n == 24:
            rows.append([1024, "Kemal Aksoy", "Forklift operatörleri", 21])
        else:
            rows.append([1000 + n, f"Çalışan {n}", "Üretim" if n % 2 else "Depo", 14])
    return rows


def _saved(workbook: openpyxl.Workbook) -> bytes:
    out = io.BytesIO()
    workbook.save(out)
    return out.getvalue()


@functools.cache  # openpyxl stamps the time into the package: the same bytes every call
def staff_xlsx() -> bytes:
    """"Personel": a header and 40 people (rows 2-11 and 14-43: rows 12 and 13 are empty), Kemal
    Aksoy of the forklift operators on row 27; "Boş", an empty sheet; "Maaşlar", a hidden sheet."""
    workbook = openpyxl.Workbook()
    sheet = workbook.active
    sheet.title = "Personel"
    sheet.append(STAFF_HEADER)
    for index, row in enumerate(_staff_rows()):
        if index == 10:
            sheet.append([])
            sheet.append([None, None])
        sheet.append(row)
    workbook.create_sheet("Boş")
    hidden = workbook.create_sheet("Maaşlar")
    hidden.append(["Ad Soyad", "Maaş"])
    hidden.append(["Kemal Aksoy", 98765])
    hidden.sheet_state = "hidden"
    workbook.properties.title = "Personel izin listesi"
    return _saved(workbook)


def simple_xlsx(rows: list[list], title: str = "Sayfa1") -> bytes:
    workbook = openpyxl.Workbook()
    workbook.active.title = title
    for row in rows:
        workbook.active.append(row)
    return _saved(workbook)


def rewritten(data: bytes, parts: dict[str, bytes | str]) -> bytes:
    """The package with `parts` replaced or added (the others copied as they are)."""
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as source, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as target:
        for item in source.infolist():
            if item.filename not in parts:
                target.writestr(item, source.read(item.filename))
        for name, content in parts.items():
            target.writestr(name, content)
    return out.getvalue()


def sheet_xml(body: str, before: str = "") -> str:
    return f'<worksheet xmlns="{MAIN}">{before}<sheetData>{body}</sheetData></worksheet>'


def inline(ref: str, text: str) -> str:
    return f'<c r="{ref}" t="inlineStr"><is><t>{text}</t></is></c>'


def formula_xlsx() -> bytes:
    """A sheet whose C2 is a formula with the value Excel saved beside it (84)."""
    rows = (f'<row r="1">{inline("A1", "Kalem")}{inline("B1", "Adet")}{inline("C1", "Toplam")}</row>'
            f'<row r="2">{inline("A2", "Baret")}<c r="B2"><v>42</v></c><c r="C2"><f>B2*2</f><v>84</v></c></row>')
    return rewritten(simple_xlsx([["x"]]), {SHEET1: sheet_xml(rows)})


def macro_xlsx() -> bytes:
    """A workbook saved with a VBA project (what an .xlsm holds)."""
    return rewritten(staff_xlsx(), {"xl/vbaProject.bin": b"\xd0\xcf\x11\xe0 VBA project"})


def excel4_macro_xlsx() -> bytes:
    """An Excel 4.0 macro sheet: macros without any vbaProject.bin."""
    return rewritten(staff_xlsx(), {"xl/macrosheets/sheet1.xml": '<xm:macrosheet xmlns:xm="urn:x"/>'})


def encrypted_office() -> bytes:
    """What Excel or PowerPoint writes for a password-protected file: an OLE compound file
    holding an `EncryptedPackage` stream (the same container for every Office program)."""
    return (bytes.fromhex("D0CF11E0A1B11AE1") + b"\0" * 504 + "EncryptedInfo".encode("utf-16-le") + b"\0" * 64
            + "EncryptedPackage".encode("utf-16-le") + b"\0" * 2048)


def old_xls() -> bytes:
    return bytes.fromhex("D0CF11E0A1B11AE1") + b"\0" * 504 + "Workbook".encode("utf-16-le") + b"\0" * 2048


def truncated_xlsx() -> bytes:
    data = staff_xlsx()
    return data[: len(data) // 2]


def broken_sheet_xlsx() -> bytes:
    return rewritten(staff_xlsx(), {SHEET1: f'<worksheet xmlns="{MAIN}"><sheetData><row r="1"><c r="A1"'})


def shared_strings_bomb(count: int = 1_400_000, length: int = 100) -> bytes:
    """`count` different shared strings of `length` characters (2 XML nodes each: under the node
    cap), ~160 MB unpacked in a file of a few MB; openpyxl loads every shared string up front."""
    strings = "".join(f"<si><t>{n:0{length}d}</t></si>" for n in range(count))
    return with_shared_strings(f'<sst xmlns="{MAIN}" count="{count}" uniqueCount="{count}">{strings}</sst>')


def with_shared_strings(sst: str) -> bytes:
    """A sheet whose A1 and A2 are shared strings 0 and 1 of `sst` (openpyxl writes its strings
    inline; the part is declared in [Content_Types].xml, where openpyxl looks for it)."""
    data = simple_xlsx([["x"]])
    types = _part(data, "[Content_Types].xml").replace(
        "</Types>", '<Override PartName="/xl/sharedStrings.xml" ContentType="application/vnd.openxmlformats-'
                    'officedocument.spreadsheetml.sharedStrings+xml"/></Types>')
    body = '<row r="1"><c r="A1" t="s"><v>0</v></c></row><row r="2"><c r="A2" t="s"><v>1</v></c></row>'
    return rewritten(data, {"xl/sharedStrings.xml": sst, "[Content_Types].xml": types, SHEET1: sheet_xml(body)})


def row_bomb(rows: int) -> bytes:
    """`rows` rows of one cell each."""
    body = "".join(f'<row r="{n}"><c r="A{n}"><v>{n}</v></c></row>' for n in range(1, rows + 1))
    return rewritten(simple_xlsx([["x"]]), {SHEET1: sheet_xml(body)})


def far_row() -> bytes:
    """A header and one row at Excel's last row, 1,048,576: openpyxl yields every empty row between."""
    body = f'<row r="1">{inline("A1", "Ad")}</row><row r="1048576">{inline("A1048576", "Son")}</row>'
    return rewritten(simple_xlsx([["x"]]), {SHEET1: sheet_xml(body)})


def far_columns(rows: int = 100) -> bytes:
    """Rows of one cell each in column XFD (16,384), under a dimension claiming the whole grid:
    openpyxl pads each row to its last cell's column."""
    body = "".join(f'<row r="{n}">{inline(f"XFD{n}", "x")}</row>' for n in range(1, rows + 1))
    return rewritten(simple_xlsx([["x"]]), {SHEET1: sheet_xml(body, '<dimension ref="A1:XFD1048576"/>')})


def wide_row(cells: int = 20_000) -> bytes:
    """One row of more cells than Excel has columns (no cell references: openpyxl counts on)."""
    body = '<row r="1">' + "<c><v>1</v></c>" * cells + "</row>"
    return rewritten(simple_xlsx([["x"]]), {SHEET1: sheet_xml(body)})


def zip_bomb_xlsx(megabytes: int) -> bytes:
    """A workbook carrying a part of `megabytes` MB of zeros (a few hundred KB compressed)."""
    return rewritten(staff_xlsx(), {"xl/media/image1.png": b"\0" * (megabytes * 1024 * 1024)})


def doctype_xlsx() -> bytes:
    xml = (f'<!DOCTYPE worksheet [<!ENTITY a "aaaaaaaaaa">]><worksheet xmlns="{MAIN}"><sheetData><row r="1">'
           f'<c r="A1" t="inlineStr"><is><t>&a;</t></is></c></row></sheetData></worksheet>')
    return rewritten(staff_xlsx(), {SHEET1: xml})


# --------------------------------------------------------------------------- PowerPoint


def _textbox(shapes, text: str, top: float, left: float = 1.0) -> None:
    box = shapes.add_textbox(Inches(left), Inches(top), Inches(4), Inches(0.6))
    box.text_frame.text = text
    box.text_frame.paragraphs[0].runs[0].font.size = Pt(18)


@functools.cache  # the same bytes every call (the package carries times)
def training_pptx() -> bytes:
    """Four slides: 1 a title and body; 2 shapes added bottom first, a group, a table and speaker
    notes; 3 hidden; 4 a title with notes that name the forklift speed limit."""
    presentation = pptx.Presentation()
    first = presentation.slides.add_slide(presentation.slide_layouts[1])
    first.shapes.title.text = "Kişisel koruyucu donanım"
    first.placeholders[1].text = "Baret, iş ayakkabısı ve eldiven her vardiyada giyilir."

    second = presentation.slides.add_slide(presentation.slide_layouts[6])
    _textbox(second.shapes, "Alttaki kutu: eğitim sonu sınavı", top=6.0)
    _textbox(second.shapes, "Üstteki kutu: baret kontrolü", top=0.5)
    group = second.shapes.add_group_shape()
    _textbox(group.shapes, "Gruptaki kutu: kulaklık", top=3.0)
    table = second.shapes.add_table(2, 2, Inches(1), Inches(4), Inches(6), Inches(1)).table
    for (row, column), text in {(0, 0): "Donanım", (0, 1): "Değiştirme süresi", (1, 0): "Baret",
                                (1, 1): "beş yıl"}.items():
        table.cell(row, column).text = text
    second.notes_slide.notes_text_frame.text = "Eğitmene not: baretin üretim tarihi iç kısımda yazar."

    third = presentation.slides.add_slide(presentation.slide_layouts[1])
    third.shapes.title.text = "Gizli slayt: eski prosedür"
    third._element.set("show", "0")

    fourth = presentation.slides.add_slide(presentation.slide_layouts[5])
    fourth.shapes.title.text = "Forklift güvenliği"
    fourth.notes_slide.notes_text_frame.text = "Forklift depo içinde saatte en fazla 10 kilometre hızla kullanılır."
    presentation.core_properties.title = "İSG eğitimi"
    out = io.BytesIO()
    presentation.save(out)
    return out.getvalue()


def slides_pptx(count: int) -> bytes:
    presentation = pptx.Presentation()
    for n in range(1, count + 1):
        slide = presentation.slides.add_slide(presentation.slide_layouts[5])
        slide.shapes.title.text = f"Slayt başlığı {n}"
    out = io.BytesIO()
    presentation.save(out)
    return out.getvalue()


def macro_pptx() -> bytes:
    return rewritten(training_pptx(), {"ppt/vbaProject.bin": b"\xd0\xcf\x11\xe0 VBA project"})


def truncated_pptx() -> bytes:
    data = training_pptx()
    return data[: len(data) // 2]


def _part(data: bytes, name: str) -> str:
    with zipfile.ZipFile(io.BytesIO(data)) as package:
        return package.read(name).decode()


def slide_list_bomb(entries: int) -> bytes:
    """The slide list naming one slide `entries` times: one slide part, listed over and over."""
    data = slides_pptx(1)
    xml = _part(data, "ppt/presentation.xml")
    start = xml.index("<p:sldId ")
    end = xml.index("/>", start) + 2
    entry = xml[start:end]
    many = "".join(entry.replace('id="256"', f'id="{256 + n}"') for n in range(entries))
    return rewritten(data, {"ppt/presentation.xml": xml[:start] + many + xml[end:]})


def paragraph_bomb_pptx(paragraphs: int) -> bytes:
    """A slide title of `paragraphs` empty paragraphs (tens of MB of XML in a small file)."""
    data = slides_pptx(1)
    xml = _part(data, "ppt/slides/slide1.xml")
    xml = xml.replace("<a:p>", "<a:p/>" * paragraphs + "<a:p>", 1)
    return rewritten(data, {"ppt/slides/slide1.xml": xml})
