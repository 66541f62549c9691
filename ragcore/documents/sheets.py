"""Excel (.xlsx) bytes → chunks of table rows, each with its sheet's header row, cited by sheet
and rows ("Sayfa1 · satır 12–30").

A spreadsheet is a table, not prose: a row means something only under its column names. So each
visible sheet is read row by row, its first non-empty row taken as the header, and the rows
after it grouped into chunks of about CHUNK_SIZE characters, each chunk starting with the sheet's
name and the header row again: a question about row 812 retrieves a chunk that still says which
column is "Yıllık izin (gün)". Cells are joined by " | " as a Word table's are; empty rows are
skipped; values are read, not formulas (openpyxl's `data_only`: the value Excel saved with the
file). A chunk's `page_start`/`page_end` is its sheet's number (1-based, in the workbook's order)
and its `locator` the citation label.

Hidden sheets are not read: a sheet hidden by its author is usually a helper (look-up lists,
intermediate formulas), and reading it would answer from text nobody sees in Excel. Their
names are kept (`SheetText.hidden`) and the document card says they were skipped.

Macro-enabled workbooks (.xlsm, an Excel 4.0 macro sheet) are refused: the stored file is
offered for download to everyone who may read the document, and reading its text cannot take
the macros out of the file handed on; "Farklı Kaydet › .xlsx" does, in Excel.

openpyxl reads in read-only mode (rows streamed from the sheet's XML, never a whole sheet in
memory), but it loads every shared string up front and pads a row to its last cell's column.
So before it opens anything the package passes `packages`' checks (unpacked size, XML nodes,
depth, DOCTYPE) with Excel's own counts added (`_Cells`): rows, cells and shared strings against
XLSX_MAX_ROWS / XLSX_MAX_CELLS, and no row wider than Excel's 16,384 columns. While reading, the
rows and cells openpyxl yields (empty rows between rows and padded cells included) are counted
again against the same caps, and the text against DOCX_MAX_CHARACTERS.
"""

from __future__ import annotations

import datetime as dt
import io
import logging
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import openpyxl

from ragcore.core import Chunk, Page, Settings, format_integer, normalize, sanitize
from ragcore.documents import packages
from ragcore.documents.formats import UnusableFile

log = logging.getLogger(__name__)

MAIN_NS = "{http://schemas.openxmlformats.org/spreadsheetml/2006/main}"
EXCEL_MAX_COLUMNS = 16_384
CELL_SEPARATOR = " | "
MAX_SHEET_NAME_CHARS = 31  # Excel's own limit

_SPACES_RE = re.compile(r"\s+")


class ExcelError(UnusableFile):
    """A .xlsx that cannot be used; `str(exc)` is a Turkish message for the user."""


class CorruptExcel(ExcelError):
    def __init__(self, detail: str = "") -> None:
        suffix = f" ({detail})" if detail else ""
        super().__init__(f"Excel dosyası bozuk ya da eksik (yarım kalmış indirme olabilir); okunamadı{suffix}.")


class EmptyExcel(ExcelError):
    def __init__(self) -> None:
        super().__init__("Excel dosyasının görünür sayfalarında okunacak metin yok (boş ya da yalnızca gizli "
                         "sayfalar). Gizli sayfalar okunmaz; gerekiyorsa Excel'de sayfayı gösterip yeniden kaydedin.")


class MacroExcel(ExcelError):
    def __init__(self) -> None:
        super().__init__("Bu Excel dosyası makro içeriyor (.xlsm ya da makro sayfası); güvenlik için makrolu dosyalar "
                         "alınmıyor, çünkü saklanan dosya belgeyi okuyan herkese indirilmek üzere sunulur. Lütfen "
                         "Excel'de “Farklı Kaydet › Excel Çalışma Kitabı (.xlsx)” ile makrosuz kaydedip yükleyin.")


class ExcelTooLarge(ExcelError):
    """A .xlsx past one of the caps; the message names the cap and its setting."""


class ExcelWithDoctype(ExcelError):
    def __init__(self) -> None:
        super().__init__("Bu Excel dosyasında Excel'in yazmadığı bir DOCTYPE bildirimi var; güvenlik için okunmadı. "
                         "Dosyayı Excel'de açıp yeniden kaydedin ya da PDF olarak yükleyin.")


@dataclass(frozen=True)
class SheetLimits:
    """The caps a .xlsx is read under: the package caps (DOCX_MAX_UNPACKED_MB, _ELEMENTS, _DEPTH),
    XLSX_MAX_ROWS, XLSX_MAX_CELLS and DOCX_MAX_CHARACTERS."""

    package: packages.PackageLimits
    rows: int
    cells: int
    characters: int

    @classmethod
    def of(cls, settings: Settings) -> SheetLimits:
        return cls(package=packages.PackageLimits.of(settings), rows=settings.xlsx_max_rows,
                   cells=settings.xlsx_max_cells, characters=settings.docx_max_characters)


DEFAULT_LIMITS = SheetLimits.of(Settings())


@dataclass(frozen=True)
class Row:
    number: int  # as Excel numbers it (1-based)
    text: str


@dataclass(frozen=True)
class Sheet:
    number: int  # 1-based, in the workbook's order (hidden sheets counted)
    name: str
    header: Row | None
    rows: list[Row]


@dataclass(frozen=True)
class SheetText:
    """A .xlsx read: its visible sheets with text, the names of the hidden ones (not read), the
    numbers of the visible ones without text, the workbook's sheet count and its title (None
    when its properties hold none)."""

    sheets: list[Sheet]
    hidden: list[str]
    empty: list[int]
    sheet_count: int
    title: str | None = None

    @property
    def pages(self) -> list[Page]:
        """One page per read sheet: its name, header and rows, one per line (the source dialog's text)."""
        return [Page(number=sheet.number, text=sheet_page_text(sheet)) for sheet in self.sheets]


def sheet_page_text(sheet: Sheet) -> str:
    lines = [sheet.name] + ([sheet.header.text] if sheet.header else []) + [row.text for row in sheet.rows]
    return "\n".join(lines)


# --------------------------------------------------------------------------- checks before openpyxl


def _too_many(count: int, what: str, setting: str) -> ExcelTooLarge:
    return ExcelTooLarge(f"Bu Excel dosyası çok büyük: en fazla {format_integer(count)} {what} okunabiliyor, bu "
                         f"dosyada daha fazlası var ({setting}). Dosyayı birkaç parçaya bölerek yükleyin.")


class _Cells:
    """Excel's own counts for the streaming counter: rows, cells and shared strings (all sheets
    together, hidden ones too: the count runs before the workbook says which are hidden), and
    cells per row (Excel writes at most 16,384)."""

    def __init__(self, limits: SheetLimits) -> None:
        self.limits = limits
        self.rows = self.cells = self.strings = self.in_row = 0

    def __call__(self, tag: str, attrib: dict[str, str]) -> None:
        if tag == MAIN_NS + "c":
            self.cells += 1
            self.in_row += 1
            if self.cells > self.limits.cells:
                raise _too_many(self.limits.cells, "hücre", "XLSX_MAX_CELLS")
            if self.in_row > EXCEL_MAX_COLUMNS:
                raise ExcelTooLarge(f"Bu Excel dosyasının bir satırında {format_integer(EXCEL_MAX_COLUMNS)} "
                                    "hücreden fazlası var; Excel böyle dosya yazmaz, dosya bozuk ya da özel olarak "
                                    "hazırlanmış olabilir. Dosyayı Excel'de açıp yeniden kaydedin.")
        elif tag == MAIN_NS + "row":
            self.rows += 1
            self.in_row = 0
            if self.rows > self.limits.rows:
                raise _too_many(self.limits.rows, "satır", "XLSX_MAX_ROWS")
        elif tag == MAIN_NS + "si":
            self.strings += 1
            if self.strings > self.limits.cells:
                raise _too_many(self.limits.cells, "paylaşılan metin (hücre)", "XLSX_MAX_CELLS")


def _is_macro_part(name: str) -> bool:
    lowered = name.lower()
    return lowered.endswith("vbaproject.bin") or lowered.startswith(("xl/macrosheets/", "xl/dialogsheets/"))


def check_workbook(data: bytes, limits: SheetLimits = DEFAULT_LIMITS) -> None:
    """The checks before openpyxl opens the package: a ZIP with xl/workbook.xml, no macros,
    within the unpacked size (from the directory) and, streamed, within the node, depth, row,
    cell and shared-string caps. Raises an `ExcelError`."""
    entries = packages.members(data, CorruptExcel)
    names = {entry.filename for entry in entries}
    if "xl/workbook.xml" not in names:
        raise CorruptExcel("xl/workbook.xml yok")
    if any(_is_macro_part(name) for name in names):
        raise MacroExcel()
    packages.check_unpacked(entries, limits.package, packages.EXCEL, ExcelTooLarge)
    counter = packages.Counter(limits.package, packages.EXCEL, ExcelTooLarge, ExcelWithDoctype,
                               watch=_Cells(limits))
    packages.count_parts(data, counter, CorruptExcel)


# --------------------------------------------------------------------------- reading


def cell_text(value: object) -> str:
    """A cell's value as text: numbers without a float's noise (12.0 → "12"), dates as Turkish
    write them (31.12.2025), booleans as Turkish Excel shows them; text on one line."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "DOĞRU" if value else "YANLIŞ"
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() and abs(value) < 1e15 else f"{value:.15g}"
    if isinstance(value, dt.datetime):
        return value.strftime("%d.%m.%Y" if value.time() == dt.time() else "%d.%m.%Y %H:%M")
    if isinstance(value, dt.date):
        return value.strftime("%d.%m.%Y")
    if isinstance(value, dt.time):
        return value.strftime("%H:%M")
    text = normalize(sanitize(str(value).replace("\u00ad", "")))
    return _SPACES_RE.sub(" ", text).strip()


def _row_text(values: Sequence[object]) -> str:
    cells = [cell_text(value) for value in values]
    while cells and not cells[-1]:
        cells.pop()
    return CELL_SEPARATOR.join(cells)


class _Budget:
    """Rows, cells and characters as openpyxl yields them, all sheets together."""

    def __init__(self, limits: SheetLimits) -> None:
        self.limits = limits
        self.rows = self.cells = self.characters = 0

    def row(self, values: Sequence[object]) -> None:
        self.rows += 1
        self.cells += len(values)
        if self.rows > self.limits.rows:
            raise _too_many(self.limits.rows, "satır (aradaki boş satırlar dahil)", "XLSX_MAX_ROWS")
        if self.cells > self.limits.cells:
            raise _too_many(self.limits.cells, "hücre (satır içindeki boş hücreler dahil)", "XLSX_MAX_CELLS")

    def text(self, characters: int) -> None:
        self.characters += characters
        if self.characters > self.limits.characters:
            raise ExcelTooLarge(f"Bu Excel dosyası çok büyük: en fazla {format_integer(self.limits.characters)} "
                                "karakter metin okunabiliyor, bu dosyada daha fazlası var (DOCX_MAX_CHARACTERS). "
                                "Dosyayı birkaç parçaya bölerek yükleyin.")


def _sheet_rows(worksheet, budget: _Budget) -> Iterator[Row]:
    """The sheet's non-empty rows, numbered as Excel numbers them. The dimension the sheet claims
    is ignored (`reset_dimensions`): a forged "A1:XFD1048576" would pad every row to 16,384 cells."""
    worksheet.reset_dimensions()
    for number, values in enumerate(worksheet.iter_rows(values_only=True), start=1):
        budget.row(values)
        text = _row_text(values)
        if text.strip(" |"):
            budget.text(len(text) + 1)
            yield Row(number, text)


def _sheet_name(name: str) -> str:
    return sanitize(name, single_line=True).strip()[:MAX_SHEET_NAME_CHARS] or "Sayfa"


def _title(workbook) -> str | None:
    try:
        title = workbook.properties.title
    except Exception as exc:  # broken docProps/core.xml costs the hint, not the upload
        log.info("unreadable .xlsx core properties: %s", type(exc).__name__)
        return None
    return sanitize(title or "", single_line=True).strip() or None


def _read(workbook, budget: _Budget) -> SheetText:
    sheets, hidden, empty = [], [], []
    worksheets = workbook.worksheets
    for number, worksheet in enumerate(worksheets, start=1):
        name = _sheet_name(worksheet.title)
        if worksheet.sheet_state != "visible":
            hidden.append(name)
            continue
        rows = list(_sheet_rows(worksheet, budget))
        if not rows:
            empty.append(number)
            continue
        budget.text(len(name) + 1)
        sheets.append(Sheet(number=number, name=name, header=rows[0], rows=rows[1:]))
    return SheetText(sheets=sheets, hidden=hidden, empty=empty, sheet_count=len(worksheets), title=_title(workbook))


def extract_sheets(data: bytes, limits: SheetLimits = DEFAULT_LIMITS) -> SheetText:
    """The workbook's visible sheets as header and rows; refuses a .xlsx that is not a usable
    package, holds macros, is past one of `limits`, or has no text in a visible sheet."""
    check_workbook(data, limits)
    try:
        workbook = openpyxl.load_workbook(io.BytesIO(data), read_only=True, data_only=True, keep_links=False)
    except Exception as exc:  # openpyxl raises many types on broken packages and XML
        raise CorruptExcel(type(exc).__name__) from exc
    try:
        text = _read(workbook, _Budget(limits))
    except ExcelError:
        raise
    except Exception as exc:  # a sheet's XML broken past its start, read lazily
        raise CorruptExcel(type(exc).__name__) from exc
    finally:
        workbook.close()
    if not text.sheets:
        raise EmptyExcel()
    return text


# --------------------------------------------------------------------------- chunks and citations


def rows_label(sheet: str, first: int, last: int) -> str:
    """"Sayfa1 · satır 12–30" ("satır 12" for one row): a .xlsx chunk's citation."""
    rows = str(first) if first == last else f"{first}–{last}"
    return f"{sheet} · satır {rows}"


def repeated_header(sheet: Sheet, size: int) -> str:
    """The header row as repeated into every chunk: cut to half a chunk when longer, so a header
    of thousands of columns cannot multiply the text by the number of chunks."""
    header = sheet.header.text if sheet.header else ""
    limit = max(size // 2, 1)
    return header if len(header) <= limit else header[:limit].rstrip() + "…"


def _chunk_text(sheet: Sheet, header: str, rows: Sequence[Row]) -> str:
    return "\n".join([sheet.name, *([header] if header else []), *(row.text for row in rows)])


def _groups(sheet: Sheet, header: str, size: int) -> Iterator[list[Row]]:
    """The sheet's rows in groups of about `size` characters with the name and header: a row
    that alone is longer is a group of its own; no row is split."""
    base = len(sheet.name) + 1 + (len(header) + 1 if header else 0)
    group: list[Row] = []
    length = base
    for row in sheet.rows:
        if group and length + len(row.text) + 1 > size:
            yield group
            group, length = [], base
        group.append(row)
        length += len(row.text) + 1
    if group:
        yield group


def chunk_sheets(text: SheetText, size: int) -> list[Chunk]:
    """Every read sheet's rows as chunks of about `size` characters, each starting with the sheet's
    name and header row (the first chunk the whole header, the others `repeated_header`) and cited
    by its rows. A sheet of a header row alone is one chunk (cited by that row). `char_start`/`char_end` index the chunks' texts joined by newlines."""
    chunks: list[Chunk] = []
    offset = 0
    for sheet in text.sheets:
        header = repeated_header(sheet, size)
        groups = list(_groups(sheet, header, size)) or [[]]
        for index, rows in enumerate(groups):
            body = rows or [sheet.header]
            chunk_text = _chunk_text(sheet, sheet.header.text if index == 0 else header, rows)
            chunks.append(Chunk(ordinal=len(chunks), text=chunk_text, page_start=sheet.number, page_end=sheet.number,
                                article=None, char_start=offset, char_end=offset + len(chunk_text),
                                locator=rows_label(sheet.name, body[0].number, body[-1].number)))
            offset += len(chunk_text) + 1
    return chunks
