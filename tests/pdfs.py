"""Small PDFs generated for tests: good ones, and every kind of bad input an upload may be.

Core fonts only (ASCII text), so the helpers need no font files on the test machine; the
Turkish-specific normalisation is tested on strings directly.
"""

from __future__ import annotations

from collections.abc import Collection
from datetime import UTC, datetime

from fpdf import FPDF

_FIXED_DATE = datetime(2024, 1, 1, tzinfo=UTC)


def _new() -> FPDF:
    pdf = FPDF()
    pdf.set_creation_date(_FIXED_DATE)
    pdf.set_font("Helvetica", size=11)
    pdf.set_auto_page_break(True, margin=15)
    return pdf


def text_pdf(pages: list[str], *, encrypt_user_password: str | None = None) -> bytes:
    """One PDF page per string; an empty string gives a page without any text."""
    pdf = _new()
    if encrypt_user_password is not None:
        pdf.set_encryption(owner_password="owner-secret", user_password=encrypt_user_password)
    for text in pages:
        pdf.add_page()
        for line in text.split("\n"):
            if line:
                pdf.multi_cell(0, 6, line, new_x="LMARGIN", new_y="NEXT")
            else:
                pdf.ln(6)
    return bytes(pdf.output())


def image_only_pdf(pages: int = 2) -> bytes:
    """Pages with drawings but no text layer at all, like a scan."""
    pdf = _new()
    for index in range(pages):
        pdf.add_page()
        pdf.set_fill_color(30 + index * 40, 30, 30)
        pdf.rect(20, 20, 120, 80, style="F")
        pdf.line(20, 120, 180, 200)
    return bytes(pdf.output())


def encrypted_pdf() -> bytes:
    return text_pdf(["Gizli belge. Bu metin parola ile korunuyor."], encrypt_user_password="user-secret")


def truncated_pdf() -> bytes:
    data = text_pdf(["Yarim kalmis bir indirme. " * 20, "Ikinci sayfa. " * 20])
    return data[: len(data) // 2]


def corrupt_pdf() -> bytes:
    """Looks like a PDF at both ends, garbage in between."""
    return b"%PDF-1.7\n" + bytes(range(256)) * 20 + b"\ntrailer\n<< /Root 99 0 R >>\n%%EOF\n"


def not_a_pdf() -> bytes:
    return "Bu bir metin dosyasıdır, PDF değildir.\n".encode() * 10


LAW_PAGES = [
    "ORNEK YONETMELIK\nBIRINCI BOLUM\nAmac\n"
    "MADDE 1 - (1) Bu Yonetmeligin amaci isyerlerinde guvenligi saglamaktir.\n"
    "Kapsam\nMADDE 2 - (1) Bu Yonetmelik butun isyerlerine uygulanir.\n"
    "(2) Kamu kurumlari da kapsamdadir.",
    "Tanimlar\nMADDE 3 - (1) Bu Yonetmelikte gecen calisan, isyerinde calisan kisidir.\n"
    "GECICI MADDE 1 - (1) Mevcut isyerleri bir yil icinde uyum saglar.",
]


def law_pdf() -> bytes:
    """A two-page document with article headings, one article per heading."""
    return text_pdf(LAW_PAGES)



def sized_pdf(sizes: list[tuple[float, float]], *, blank: Collection[int] = ()) -> bytes:
    """One page per (width, height) in points, each with a line of text (a text layer) except
    the page numbers in `blank` (nothing on them, like an empty scan, so ingest reads them by
    OCR). A page box of 14400 pt is 5 metres: the issue 36 probe's page images and OCR drawings."""
    pdf = FPDF(unit="pt")
    pdf.set_creation_date(_FIXED_DATE)
    pdf.set_font("Helvetica", size=12)
    pdf.set_auto_page_break(False)
    for number, (width, height) in enumerate(sizes, start=1):
        pdf.add_page(format=(width, height))
        if number not in blank:
            pdf.text(36, 48, f"MADDE {number} - (1) Bu sayfa {width:.0f} x {height:.0f} punto; isveren "
                             "calisanlari bilgilendirir.")
    return bytes(pdf.output())
