"""Every page drawing is bounded (issue 36): the page image of the cited-page dialog and the API,
and the drawing Tesseract reads, stay within RENDER_MAX_MEGAPIXELS, at a lower dpi when the page
is large, refused with a Turkish message below the floor (PAGE_IMAGE_MIN_DPI, OCR_MIN_DPI); OCR
reads at most OCR_MAX_PAGES pages per upload and gives Tesseract OCR_PAGE_SECONDS per page; an
upload records which pages' images are drawn smaller or not at all.

The probe's files are generated here (`tests.pdfs.sized_pdf`): a one-page text PDF with a
14400 × 14400 pt MediaBox (the page image took the API from 265 MB to 6 GB) and a blank
20000 × 20000 pt page (OCR took it to 6 GB). The memory tests run the real code paths in a
child process and read its peak RSS (Linux's VmHWM, reset after a warm-up) against its RSS just before the drawing,
with a generous bound, MEMORY_BOUND_MB; the child also lowers its own address-space limit, so a
drawing without a budget fails there at once instead of taking the machine's memory.
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pypdfium2
import pytest
from PIL import Image

from ragcore import jobs
from ragcore.core import Document, sha256_bytes
from ragcore.documents import (
    IngestError,
    PageTooLarge,
    PixelBudget,
    get_document,
    ingest_pdf,
    page_image,
    page_size_notes,
    stored_path,
)
from ragcore.documents.page_images import DISPLAY_DPI, cache_dir
from ragcore.documents.rendering import drawing_dpi, open_pdf, pixels, render_page
from tests import pdfs
from tests.retrieval_support import make_test_embedder
from tests.test_ingest import state

REPO = Path(__file__).resolve().parent.parent
A4 = (595.0, 842.0)
PROBE_IMAGE_PT = 14400.0  # the probe's page image: 24000 × 24000 px at 120 dpi
PROBE_OCR_PT = 20000.0  # the probe's blank page: 83334 × 83334 px at 300 dpi
LARGE_PT = 4000.0  # 44 megapixels at 120 dpi: drawn at 80 dpi, right at the 20-megapixel budget
MEMORY_BOUND_MB = 300  # stated bound on the growth of the process's peak RSS for one drawing


@pytest.fixture(scope="module")
def embedder():
    return make_test_embedder()


def stored_document(settings, data: bytes, pages: int) -> Document:
    """A document as `page_image` sees it, its file in place (no database: the role check is the
    record's own `allowed_roles`)."""
    digest = sha256_bytes(data)
    path = stored_path(settings, digest)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return Document(id=1, title="Deneme", filename="deneme.pdf", sha256=digest, page_count=pages,
                    allowed_roles=("isg",), uploaded_by=None, created_at=datetime.now(UTC))


# ----------------------------------------------------------------------------- the arithmetic


def test_a_large_page_is_drawn_at_the_highest_dpi_within_the_budget(settings) -> None:
    budget = PixelBudget.for_images(settings)
    assert budget.max_pixels == 20_000_000 and budget.min_dpi == 50
    # An A4 page at 300 dpi (8.7 megapixels) is drawn as asked, as is any page that fits.
    assert drawing_dpi(1, *A4, 300, budget) == 300
    assert drawing_dpi(1, *A4, DISPLAY_DPI, budget) == DISPLAY_DPI
    lowered = drawing_dpi(1, LARGE_PT, LARGE_PT, DISPLAY_DPI, budget)
    assert lowered == 80
    assert pixels(LARGE_PT, LARGE_PT, lowered) <= budget.max_pixels
    assert pixels(LARGE_PT, LARGE_PT, lowered + 1) > budget.max_pixels  # the highest that fits
    pdf = open_pdf(pdfs.sized_pdf([(LARGE_PT, LARGE_PT)]))
    try:
        image = render_page(pdf, 1, DISPLAY_DPI, budget)
    finally:
        pdf.close()
    assert image.size == (4445, 4445) and image.info["dpi"] == (80, 80) and image.mode == "RGB"


def test_a_page_too_large_even_at_the_floor_is_refused_in_turkish_before_drawing(settings, monkeypatch) -> None:
    budget = PixelBudget.for_images(settings)
    drawn: list[object] = []
    monkeypatch.setattr(pypdfium2.PdfPage, "render", lambda *args, **kwargs: drawn.append(args))
    pdf = open_pdf(pdfs.sized_pdf([(PROBE_IMAGE_PT, PROBE_IMAGE_PT)]))
    try:
        with pytest.raises(PageTooLarge) as refused:
            render_page(pdf, 1, DISPLAY_DPI, budget)
    finally:
        pdf.close()
    assert drawn == []  # PDFium was never asked to draw
    assert str(refused.value) == (
        "Sayfa 1 çok büyük (508 × 508 cm): en düşük çözünürlükte (50 dpi) bile çizimi 100 megapiksel tutar; "
        "bu sunucu bir sayfayı en fazla 20 megapiksel çizer. Sayfa görüntü olarak gösterilemez; sayfanın "
        "metnini ya da tek sayfalık PDF'ini açın.")


def test_the_page_image_follows_the_settings_and_a_refusal_caches_nothing(settings) -> None:
    """Through `page_image`, the API's and the dialog's function: a budget of 1 megapixel draws an
    A4 page at 101 dpi instead of 120; with a floor of 110 dpi it is refused, nothing cached, and
    asking again is refused again the same way."""
    doc = stored_document(settings, pdfs.sized_pdf([A4]), 1)
    small = settings.replace(render_max_megapixels=1)
    with Image.open(io.BytesIO(page_image(small, doc, 1, "isg", "").png)) as drawn:
        assert drawn.size == (835, 1182)  # 101 dpi: 0.99 megapixels
    strict = small.replace(page_image_min_dpi=110, data_dir=settings.data_dir / "strict")
    strict_doc = stored_document(strict, pdfs.sized_pdf([A4, A4]), 2)
    for _ in range(2):
        with pytest.raises(PageTooLarge, match=r"^Sayfa 2 çok büyük \(21 × 30 cm\): en düşük çözünürlükte "
                                               r"\(110 dpi\) bile çizimi 1,2 megapiksel tutar; bu sunucu bir "
                                               r"sayfayı en fazla 1 megapiksel çizer\."):
            page_image(strict, strict_doc, 2, "isg", "")
    assert not cache_dir(strict, strict_doc.sha256).exists()


# ----------------------------------------------------------------------------- memory, in a child process

CHILD = r"""
import json, resource, sys
from datetime import UTC, datetime
from pathlib import Path

import psutil

from ragcore.core import Document, Settings, sha256_bytes
from ragcore.documents import PageTooLarge, PdfError, extract_pages, page_image, stored_path
from ragcore.documents.ocr import OcrLimits
from tests import pdfs

job = json.loads(sys.argv[1])
settings = Settings(data_dir=Path(job["data_dir"]))
ADDRESS_SPACE_HEADROOM = 1536 * 2**20  # far below the 1.7 GB bitmap of an unbounded 14400 pt page image


def document(data, pages):
    digest = sha256_bytes(data)
    path = stored_path(settings, digest)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return Document(id=1, title="t", filename="t.pdf", sha256=digest, page_count=pages, allowed_roles=("isg",),
                    uploaded_by=None, created_at=datetime.now(UTC))


def sizes(pages):
    return [tuple(size) for size in pages]


def resident(field):
    # Linux's own figures for this process: VmRSS now, VmHWM its peak since the last reset. (Not
    # ru_maxrss: it keeps the peak of the process this one was started from, the test runner's.)
    line = next(line for line in Path("/proc/self/status").read_text().splitlines() if line.startswith(field))
    return int(line.split()[1]) * 1024


# Warm up: the libraries, PDFium and the PNG codec loaded by one A4 page; then the peak is reset
# (5 written to clear_refs), so the peak read after the drawing is the drawing's alone.
page_image(settings, document(pdfs.sized_pdf([(595, 842)]), 1), 1, "isg", "MADDE 1")
extract_pages(pdfs.sized_pdf([(595, 842)]), ocr_limits=OcrLimits.of(settings))
resource.setrlimit(resource.RLIMIT_AS, (psutil.Process().memory_info().vms + ADDRESS_SPACE_HEADROOM,
                                        resource.RLIM_INFINITY))
Path("/proc/self/clear_refs").write_text("5")
before = resident("VmRSS:")
outcome = {}
totals = []  # the OCR's page totals, as its progress reports them
try:
    data = pdfs.sized_pdf(sizes(job["pages"]), blank=set(job["blank"]))
    if job["path"] == "page_image":
        png = page_image(settings, document(data, len(job["pages"])), job["number"], "isg", "MADDE").png
        outcome["png_bytes"] = len(png)
    else:
        text = extract_pages(data, ocr_limits=OcrLimits.of(settings),
                             ocr_progress=lambda done, total: totals.append(total))
        outcome.update(ocr_total=max(totals, default=None), skipped=text.skipped_pages,
                       too_large=text.too_large_for_ocr, ocr=text.ocr_pages)
except PageTooLarge as exc:
    outcome["refused"] = str(exc)
except PdfError as exc:
    outcome.update(pdf_error=str(exc), ocr_total=max(totals, default=None))
outcome["growth_mb"] = (resident("VmHWM:") - before) / 2**20
print(json.dumps(outcome))
"""


def drawn_in_a_child(tmp_path: Path, path: str, pages: list[tuple[float, float]], *, number: int = 1,
                     blank: tuple[int, ...] = ()) -> dict:
    job = {"data_dir": str(tmp_path / "child"), "path": path, "pages": pages, "number": number, "blank": blank}
    run = subprocess.run([sys.executable, "-c", CHILD, json.dumps(job)], cwd=REPO, capture_output=True, text=True,
                         timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    return json.loads(run.stdout.strip().splitlines()[-1])


def test_page_image_of_the_probes_page_stays_within_the_memory_bound(tmp_path) -> None:
    """The 14400 pt page is refused by arithmetic; a 4000 pt page is drawn right at the budget.
    Either way the API's process grows by less than MEMORY_BOUND_MB (measured: about 150 MB for
    the drawn page, nothing for the refusal)."""
    refused = drawn_in_a_child(tmp_path, "page_image", [(PROBE_IMAGE_PT, PROBE_IMAGE_PT)])
    assert refused["refused"].startswith("Sayfa 1 çok büyük (508 × 508 cm)"), refused
    assert refused["growth_mb"] < MEMORY_BOUND_MB, refused
    drawn = drawn_in_a_child(tmp_path, "page_image", [A4, (LARGE_PT, LARGE_PT)], number=2)
    assert drawn.get("png_bytes", 0) > 0, drawn
    assert drawn["growth_mb"] < MEMORY_BOUND_MB, drawn


def test_ocr_of_the_probes_blank_page_stays_within_the_memory_bound(tmp_path) -> None:
    """The blank 20000 pt page is too large for OCR even at OCR_MIN_DPI: not drawn, the upload
    refused in Turkish. A blank 2000 pt page next to a text page is drawn for Tesseract at
    160 dpi instead of 300 (19.8 megapixels instead of 69) and read; this process stays within
    MEMORY_BOUND_MB (Tesseract, a process of its own, gets the 20-megapixel PNG)."""
    probe = drawn_in_a_child(tmp_path, "ocr", [(PROBE_OCR_PT, PROBE_OCR_PT)], blank=(1,))
    assert "sayfa 1 OCR ile okunamayacak kadar büyük (sınırlar: RENDER_MAX_MEGAPIXELS ve OCR_MIN_DPI)" in probe[
        "pdf_error"], probe
    assert probe["ocr_total"] == 0 and probe["growth_mb"] < MEMORY_BOUND_MB, probe  # no page given to Tesseract
    read = drawn_in_a_child(tmp_path, "ocr", [A4, (2000.0, 2000.0)], blank=(2,))
    assert read["ocr_total"] == 1 and read["too_large"] == [] and read["skipped"] == [2], read  # read: no text
    assert read["growth_mb"] < MEMORY_BOUND_MB, read


# ----------------------------------------------------------------------------- OCR's caps


def test_more_scanned_pages_than_the_cap_refuse_the_upload_before_any_is_read(db, settings, embedder) -> None:
    before = state(db, settings)
    events: list[tuple[str, int, int]] = []
    capped = settings.replace(ocr_max_pages=2)
    with pytest.raises(IngestError) as refused:
        ingest_pdf(db, capped, embedder, pdfs.sized_pdf([A4] * 4, blank={2, 3, 4}), filename="tarama.pdf",
                   roles=["isg"], progress=lambda stage, done, total: events.append((stage, done, total)))
    assert str(refused.value) == (
        "PDF'in 3 sayfasında metin katmanı yok; bu sunucu bir belgede en fazla 2 sayfayı OCR ile okur "
        "(OCR_MAX_PAGES). Belge eklenmedi: belgeyi en fazla 2 taranmış sayfalık parçalara bölüp yükleyin ya da "
        "metin katmanı olan bir kopyasını yükleyin.")
    assert not [e for e in events if e[0] == "ocr"]  # no page was drawn or read
    assert state(db, settings) == before
    # At the cap, the same file ingests.
    result = ingest_pdf(db, settings.replace(ocr_max_pages=3), embedder, pdfs.sized_pdf([A4] * 4, blank={2, 3, 4}),
                        filename="tarama.pdf", roles=["isg"])
    assert result.skipped_pages == [2, 3, 4]


def test_a_page_over_the_seconds_cap_fails_the_upload_naming_the_page(db, settings, embedder) -> None:
    """Tesseract, the real one, cannot even load its Turkish model in a millisecond: it is
    stopped, the upload fails naming page 2 and the setting, and nothing is stored."""
    before = state(db, settings)
    with pytest.raises(IngestError) as failed:
        ingest_pdf(db, settings.replace(ocr_page_seconds=0.001), embedder, pdfs.sized_pdf([A4, A4], blank={2}),
                   filename="tarama.pdf", roles=["isg"])
    assert str(failed.value).startswith("Sayfa 2 OCR ile 1 sn içinde okunamadı (sınır: OCR_PAGE_SECONDS); "
                                        "Tesseract durduruldu.")
    assert state(db, settings) == before


def test_a_scanned_page_too_large_for_ocr_is_skipped_and_said(db, settings, embedder) -> None:
    """With a budget of 1 megapixel an A4 page needs 2.2 at OCR_MIN_DPI: not read, listed as
    without text, and the upload's summary says why."""
    small = settings.replace(render_max_megapixels=1)
    result = ingest_pdf(db, small, embedder, pdfs.sized_pdf([A4, A4], blank={2}), filename="karisik.pdf",
                        roles=["isg"])
    assert result.skipped_pages == [2] and result.ocr_pages == [] and result.too_large_for_ocr == [2]
    assert result.as_dict()["too_large_for_ocr"] == [2]
    with pytest.raises(IngestError, match="sayfa 1 OCR ile okunamayacak kadar büyük"):
        ingest_pdf(db, small, embedder, pdfs.sized_pdf([A4], blank={1}), filename="tarama.pdf", roles=["isg"])


# ----------------------------------------------------------------------------- flagged at ingest


def test_oversized_pages_are_recorded_at_upload_and_said_in_turkish(db, settings, embedder) -> None:
    data = pdfs.sized_pdf([A4, (LARGE_PT, LARGE_PT), (PROBE_IMAGE_PT, PROBE_IMAGE_PT)])
    result = ingest_pdf(db, settings, embedder, data, filename="buyuk.pdf", roles=["isg"])
    assert (result.oversized_pages, result.undrawable_pages, result.pages) == ([2], [3], 3)
    assert {k: result.as_dict()[k] for k in ("oversized_pages", "undrawable_pages")} == {
        "oversized_pages": [2], "undrawable_pages": [3]}
    doc = get_document(db, result.document_id, "isg")
    assert (doc.oversized_pages, doc.undrawable_pages) == ((2,), (3,))
    with db.connection() as conn:
        assert conn.execute("SELECT oversized_pages, undrawable_pages FROM documents").fetchone() == ([2], [3])
    assert page_size_notes(doc.oversized_pages, doc.undrawable_pages) == [
        "1 sayfa çok büyük (s. 2): sayfa görüntüsü küçültülerek gösterilir.",
        "1 sayfa görüntü olarak gösterilemeyecek kadar büyük (s. 3): o sayfanın metnini ya da tek sayfalık PDF'ini "
        "açın.",
    ]
    summary = jobs.get_kind(jobs.INGEST).summary(result.as_dict())  # the upload job's line on the Dokümanlar page
    assert ": 3 sayfa, " in summary and summary.endswith(" sürdü. " + " ".join(page_size_notes([2], [3])))
    plain = ingest_pdf(db, settings, embedder, pdfs.law_pdf(), filename="yonetmelik.pdf", roles=["isg"])
    assert (plain.oversized_pages, plain.undrawable_pages) == ([], [])


def test_page_size_notes_list_at_most_ten_pages() -> None:
    assert page_size_notes(list(range(1, 13)), []) == [
        "12 sayfa çok büyük (s. 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, …): sayfa görüntüsü küçültülerek gösterilir."]
    assert page_size_notes([], []) == []
