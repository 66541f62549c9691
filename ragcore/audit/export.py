"""The audit trail as a CSV file an auditor opens in Excel: Turkish headers, UTF-8 with a BOM (so
Excel reads "ş" as "ş"), `;` between fields (Excel's separator where the decimal mark is a comma,
as in Turkey), one row per question with every shown passage in one cell (its document's whole
sha256: the file can be matched byte for byte).

Written as it is read (`csv_chunks` yields text row by row from `audit_rows`' server-side cursor),
so memory stays flat whatever the size, and cut at AUDIT_EXPORT_MAX_ROWS rows: a cut file says so
in its last line. A cell that starts like a formula (=, +, -, @, tab, CR) is written with a
leading apostrophe, so a question typed as "=HYPERLINK(…)" stays text in Excel.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator
from datetime import datetime

from ragcore.audit.trail import (
    EVERY_ROW,
    AuditFilter,
    AuditRow,
    audit_rows,
    count_rows,
    require_audit_reader,
    role_label,
)
from ragcore.core import Settings, User, format_integer
from ragcore.store import Database

BOM = "\ufeff"
DELIMITER = ";"
HEADERS = ("Zaman", "Kullanıcı", "Roller", "Soru", "Sonuç", "Cevap", "Hata", "Gösterilen kaynaklar",
           "Geri bildirim", "Geri bildirim yorumu", "Soru kimliği")
FEEDBACK_LABELS = {1: "olumlu (👍)", -1: "olumsuz (👎)"}
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def safe_cell(value: str) -> str:
    """The text as Excel must keep it: never read as a formula."""
    return "'" + value if value.startswith(_FORMULA_START) else value


def role_names(roles: tuple[str, ...]) -> str:
    return ", ".join(role_label(r) for r in roles)


def csv_values(row: AuditRow) -> list[str]:
    """One question as the CSV's cells, in the order of HEADERS."""
    values = [
        row.asked_at.astimezone().strftime("%d.%m.%Y %H:%M:%S"), row.username, role_names(row.roles), row.question,
        row.outcome_label, row.answer or "", row.error or "", " | ".join(p.label(full=True) for p in row.passages),
        FEEDBACK_LABELS.get(row.feedback, "") if row.feedback is not None else "", row.feedback_comment or "",
        row.question_id,
    ]
    return [safe_cell(v) for v in values]


def _line(cells: list[str]) -> str:
    buffer = io.StringIO()
    csv.writer(buffer, delimiter=DELIMITER, lineterminator="\r\n").writerow(cells)
    return buffer.getvalue()


def csv_chunks(db: Database, settings: Settings, reader: User, filters: AuditFilter = EVERY_ROW) -> Iterator[str]:
    """The file's text, the BOM and header first, then one chunk per row; at most
    AUDIT_EXPORT_MAX_ROWS rows, and a last line saying so when more matched."""
    require_audit_reader(reader)
    cap = settings.audit_export_max_rows
    filters.params()  # a bad filter fails before the first byte is sent
    yield BOM + _line(list(HEADERS))
    written = 0
    for row in audit_rows(db, reader, filters, cap):
        written += 1
        yield _line(csv_values(row))
    if written == cap and count_rows(db, reader, filters) > cap:
        yield _line([cut_notice(cap)])


def cut_notice(cap: int) -> str:
    return (f"Dosya ilk {format_integer(cap)} satırda kesildi (AUDIT_EXPORT_MAX_ROWS); kalanlar için tarih "
            "aralığını ya da süzgeçleri daraltın.")


def csv_filename(now: datetime | None = None) -> str:
    moment = (now or datetime.now()).strftime("%Y%m%d-%H%M")
    return f"denetim-kaydi-{moment}.csv"
