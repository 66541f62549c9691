"""Excel (.xlsx) and PowerPoint (.pptx) files (issue 39): sheets read as tables (the header row
repeated into every chunk, cited "Personel · satır 15–25"), slides with their notes (cited
"slayt 4"), found by retrieval on the real database, and refused with nothing stored when they
are encrypted, macro-enabled, corrupt or past a cap. Fixtures are built at test time
(tests/officefiles.py); bombs are read in a child process with bounded memory and CPU.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from ragcore import jobs
from ragcore.core import LOCATOR_ROWS, LOCATOR_SLIDE, Settings
from ragcore.documents import (
    ExcelTooLarge,
    IngestError,
    PageNotFound,
    PowerPointTooLarge,
    SheetLimits,
    SlideLimits,
    check_upload,
    chunk_sheets,
    chunk_slides,
    detect_format,
    document_chunks,
    extract_sheets,
    extract_slides,
    get_document,
    ingest_file,
    page_image,
    read_page,
    stored_path,
)
from ragcore.retrieval import search
from tests import officefiles, test_cli_documents
from tests.api_support import api_app, bearer, error_code, person
from tests.retrieval_support import make_test_embedder
from tests.test_ingest import check_lexical_index, state

REPO = Path(__file__).resolve().parent.parent
cli = test_cli_documents.cli  # the command line as a user runs it (a fixture)


@pytest.fixture(scope="module")
def embedder():
    return make_test_embedder()


# ----------------------------------------------------------------------------- sheets


def test_sheets_are_read_as_header_and_rows_hidden_and_empty_sheets_named() -> None:
    text = extract_sheets(officefiles.staff_xlsx())
    assert [(s.number, s.name) for s in text.sheets] == [(1, "Personel")]
    assert text.hidden == ["Maaşlar"] and text.empty == [2] and text.sheet_count == 3
    assert text.title == "Personel izin listesi"
    sheet = text.sheets[0]
    assert sheet.header.number == 1 and sheet.header.text == "Sicil | Ad Soyad | Departman | Yıllık izin (gün)"
    numbers = [row.number for row in sheet.rows]
    assert numbers == [*range(2, 12), *range(14, 44)]  # rows 12 and 13 are empty: skipped, not renumbered
    forklift = next(row for row in sheet.rows if "Kemal Aksoy" in row.text)
    assert (forklift.number, forklift.text) == (officefiles.FORKLIFT_ROW, "1024 | Kemal Aksoy | Forklift operatörleri | 21")
    assert "98765" not in "\n".join(page.text for page in text.pages)  # the hidden sheet is not read


def test_every_chunk_repeats_the_header_and_is_cited_by_sheet_and_rows() -> None:
    chunks = chunk_sheets(extract_sheets(officefiles.staff_xlsx()), 400)
    assert len(chunks) > 2
    header = "Personel\nSicil | Ad Soyad | Departman | Yıllık izin (gün)\n"
    assert all(c.text.startswith(header) for c in chunks)
    assert all(len(c.text) <= 400 for c in chunks)
    assert [c.locator for c in chunks] == ["Personel · satır 2–14", "Personel · satır 15–25",
                                           "Personel · satır 26–35", "Personel · satır 36–43"]
    forklift = next(c for c in chunks if "Kemal Aksoy" in c.text)
    assert forklift.locator == "Personel · satır 26–35" and (forklift.page_start, forklift.page_end) == (1, 1)
    body = [line for c in chunks for line in c.text.split("\n")[2:]]
    assert len(body) == 40 == len(set(body))  # every row once, none lost between chunks


def test_values_are_read_not_formulas() -> None:
    assert extract_sheets(officefiles.formula_xlsx()).pages[0].text == "Sayfa1\nKalem | Adet | Toplam\nBaret | 42 | 84"


def test_a_very_long_header_is_cut_where_it_repeats() -> None:
    """A header of thousands of characters cannot multiply the text by the number of chunks."""
    header = [f"Sütun {n} açıklaması" for n in range(300)]
    rows = [header] + [[f"değer {n}"] for n in range(200)]
    chunks = chunk_sheets(extract_sheets(officefiles.simple_xlsx(rows)), 1000)
    assert len(chunks[0].text.split("\n")[1]) > 5000  # the first chunk has it whole
    assert all(len(c.text) <= 1000 + 10 for c in chunks[1:]) and chunks[1].text.split("\n")[1].endswith("…")


# ----------------------------------------------------------------------------- slides


def test_slides_give_shapes_in_reading_order_tables_groups_and_notes() -> None:
    text = extract_slides(officefiles.training_pptx())
    assert [page.number for page in text.pages] == [1, 2, 4] and text.hidden == [3] and text.slide_count == 4
    assert text.title == "İSG eğitimi"
    assert text.pages[1].text.split("\n") == [
        "Üstteki kutu: baret kontrolü",  # added second, but higher on the slide
        "Gruptaki kutu: kulaklık",
        "Donanım | Değiştirme süresi",
        "Baret | beş yıl",
        "Alttaki kutu: eğitim sonu sınavı",
        "Konuşmacı notları:",
        "Eğitmene not: baretin üretim tarihi iç kısımda yazar.",
    ]
    assert "Gizli slayt" not in "\n".join(page.text for page in text.pages)


def test_each_slide_is_its_own_chunk_cited_by_its_number() -> None:
    chunks = chunk_slides(extract_slides(officefiles.training_pptx()), 1000, 100)
    assert [(c.locator, c.page_start, c.page_end) for c in chunks] == [("slayt 1", 1, 1), ("slayt 2", 2, 2),
                                                                       ("slayt 4", 4, 4)]
    assert "10 kilometre" in chunks[2].text


def test_a_long_slide_splits_but_never_joins_another() -> None:
    chunks = chunk_slides(extract_slides(officefiles.training_pptx()), 60, 10)
    assert len(chunks) > 3 and {c.locator for c in chunks} == {"slayt 1", "slayt 2", "slayt 4"}
    assert all(c.page_start == c.page_end for c in chunks)


# ----------------------------------------------------------------------------- ingest and retrieval


def test_a_question_is_answered_from_a_spreadsheet_row(db, settings, embedder) -> None:
    events: list[tuple[str, int, int]] = []
    result = ingest_file(db, settings, embedder, officefiles.staff_xlsx(), filename="izinler.xlsx", roles=["ik"],
                         progress=lambda *e: events.append(e))
    assert (result.file_format, result.pages, result.title) == ("xlsx", 3, "Personel izin listesi")
    assert result.hidden_parts == ["Maaşlar"] and result.skipped_pages == [2]
    assert list(dict.fromkeys(e[0] for e in events)) == ["read_sheets", "chunk", "embed", "store"]
    doc = get_document(db, result.document_id, "ik")
    assert doc.file_format == "xlsx" and doc.hidden_parts == ("Maaşlar",)
    assert stored_path(settings, doc.sha256, "xlsx").read_bytes() == officefiles.staff_xlsx()
    check_lexical_index(db)
    top = search(db, embedder, "Kemal Aksoy kaç gün yıllık izin kullanır?", "ik", k=3, mode="rrf",
                 settings=settings)[0]
    first, last = map(int, re.fullmatch(r"Personel · satır (\d+)–(\d+)", top.locator_label).groups())
    assert top.locator_kind == LOCATOR_ROWS and first <= officefiles.FORKLIFT_ROW <= last, top
    assert "Kemal Aksoy | Forklift operatörleri | 21" in top.text and "Yıllık izin (gün)" in top.text
    assert top.as_dict()["locator_kind"] == "rows" and top.as_dict()["locator"] == top.locator_label
    assert search(db, embedder, "Kemal Aksoy kaç gün yıllık izin kullanır?", "isg", k=5, mode="rrf",
                  settings=settings) == []
    assert all(c.locator.startswith("Personel · satır ") for c in document_chunks(db, result.document_id, "ik"))


def test_a_question_is_answered_from_slide_notes(db, settings, embedder) -> None:
    result = ingest_file(db, settings, embedder, officefiles.training_pptx(), filename="egitim.pptx", roles=["isg"])
    assert (result.file_format, result.pages, result.hidden_parts) == ("pptx", 4, ["3"])
    top = search(db, embedder, "Forklift depoda en fazla kaç kilometre hızla kullanılır?", "isg", k=3, mode="rrf",
                 settings=settings)[0]
    assert (top.locator_kind, top.locator_label, top.page_start) == (LOCATOR_SLIDE, "slayt 4", 4)
    assert "10 kilometre" in top.text
    check_lexical_index(db)


def test_the_cited_sheet_and_slide_are_read_back(db, settings, embedder) -> None:
    workbook = ingest_file(db, settings, embedder, officefiles.staff_xlsx(), filename="izinler.xlsx", roles=["ik"])
    deck = ingest_file(db, settings, embedder, officefiles.training_pptx(), filename="egitim.pptx", roles=["isg"])
    sheet = read_page(settings, get_document(db, workbook.document_id, "ik"), 1, "ik")
    assert sheet.heading == "Personel" and sheet.page_count == 3 and "Kemal Aksoy" in sheet.text
    slide = read_page(settings, get_document(db, deck.document_id, "isg"), 2, "isg")
    assert slide.page_count == 4 and slide.text.endswith("Eğitmene not: baretin üretim tarihi iç kısımda yazar.")
    with pytest.raises(PageNotFound, match="3. slayt yok"):  # hidden: not read
        read_page(settings, get_document(db, deck.document_id, "isg"), 3, "isg")
    with pytest.raises(PageNotFound, match="Excel dosyalarının sayfa görüntüsü yok"):
        page_image(settings, get_document(db, workbook.document_id, "ik"), 1, "ik")


def test_the_job_summary_and_the_sources_name_what_was_hidden(db, settings, embedder) -> None:
    from ragcore.core import Source
    from ui.sources import page_button_label, passage_text, source_label

    job = jobs.submit_ingest(db, settings, officefiles.staff_xlsx(), filename="izinler.xlsx", roles=["ik"])
    jobs.run_worker(settings, wait=False, embedder_factory=lambda: embedder)
    done = jobs.find_job(db, job.public_id)
    assert done.status == "succeeded", done.error
    summary = jobs.get_kind(jobs.INGEST).summary(done.result)
    assert "3 çalışma sayfası" in summary and "gizli olduğu için okunmayan sayfalar: Maaşlar" in summary
    rows = Source(rank=1, chunk_id=1, document_id=1, title="İzinler", filename="izinler.xlsx", page_start=1,
                  page_end=1, article=None, score=0.5, text="Personel\nAd | Gün\nKemal | 21", locator_kind=LOCATOR_ROWS,
                  locator="Personel · satır 15–25")
    assert source_label(rows) == "İzinler · Personel · satır 15–25" and page_button_label(rows) == "Satırları aç"
    assert passage_text(rows) == rows.text  # rows stay rows, never re-flowed into one paragraph


# ----------------------------------------------------------------------------- refusals


BAD_FILES = {
    "encrypted .xlsx": (officefiles.encrypted_office, "gizli.xlsx", "Excel dosyası şifreli"),
    "encrypted .pptx": (officefiles.encrypted_office, "gizli.pptx", "PowerPoint sunusu şifreli"),
    "old .xls": (officefiles.old_xls, "eski.xls", r"eski Excel biçiminde \(\.xls\)"),
    "macro .xlsm": (officefiles.macro_xlsx, "makro.xlsm", "makro içeriyor"),
    "Excel 4.0 macro sheet": (officefiles.excel4_macro_xlsx, "makro.xlsx", "makro içeriyor"),
    "macro .pptm": (officefiles.macro_pptx, "makro.pptm", "makro içeriyor"),
    "truncated .xlsx": (officefiles.truncated_xlsx, "yarim.xlsx", "Excel dosyası bozuk ya da eksik"),
    "broken sheet XML": (officefiles.broken_sheet_xlsx, "bozuk.xlsx", "Excel dosyası bozuk ya da eksik"),
    "truncated .pptx": (officefiles.truncated_pptx, "yarim.pptx", "PowerPoint dosyası bozuk ya da eksik"),
    "a DOCTYPE": (officefiles.doctype_xlsx, "doctype.xlsx", "DOCTYPE bildirimi var"),
    "only empty and hidden sheets": (lambda: officefiles.simple_xlsx([]), "bos.xlsx", "okunacak metin yok"),
    "a .xlsx named .pptx": (officefiles.staff_xlsx, "liste.pptx", r"içeriği bir Excel \(\.xlsx\) dosyası"),
    "a row past Excel's last column": (officefiles.wide_row, "genis.xlsx", r"16\.384 hücreden fazlası"),
    "a row at 1,048,576": (officefiles.far_row, "uzak.xlsx", r"100\.000 satır \(aradaki boş satırlar dahil\).*XLSX_MAX_ROWS"),
    "cells padded to column XFD": (officefiles.far_columns, "genis.xlsx", r"1\.000\.000 hücre .*XLSX_MAX_CELLS"),
    "a slide listed 1,001 times": (lambda: officefiles.slide_list_bomb(1001), "liste.pptx",
                                   r"en fazla 1\.000 slayt .*PPTX_MAX_SLIDES"),
}


@pytest.mark.parametrize("case", BAD_FILES)
def test_bad_office_files_are_refused_and_nothing_written(db, settings, embedder, case) -> None:
    ingest_file(db, settings, embedder, officefiles.training_pptx(), filename="ok.pptx", roles=["isg"])  # a baseline
    before = state(db, settings)
    make, name, message = BAD_FILES[case]
    with pytest.raises(IngestError, match=message):
        ingest_file(db, settings, embedder, make(), filename=name, roles=["isg"])
    assert state(db, settings) == before


def test_encrypted_and_macro_files_are_refused_before_they_are_queued(db, settings) -> None:
    for data, name, message in ((officefiles.encrypted_office(), "gizli.xlsx", "şifreli"),
                                (officefiles.encrypted_office(), "gizli.pptx", "şifreli"),
                                (officefiles.old_xls(), "eski.xls", "eski Excel")):
        with pytest.raises(jobs.JobError, match=message):
            jobs.submit_ingest(db, settings, data, filename=name, roles=["isg"])
    with db.connection() as conn:
        assert conn.execute("SELECT count(*) FROM jobs").fetchone()[0] == 0


def test_a_macro_workbook_fails_its_job_for_good_and_stores_nothing(db, settings, embedder) -> None:
    job = jobs.submit_ingest(db, settings, officefiles.macro_xlsx(), filename="makro.xlsm", roles=["isg"])
    jobs.run_worker(settings, wait=False, embedder_factory=lambda: embedder)
    failed = jobs.find_job(db, job.public_id)
    assert failed.status == "failed" and failed.attempts == 1 and "makro içeriyor" in failed.error, failed
    assert state(db, settings)["counts"] == {"documents": 0, "chunks": 0, "postings": 0, "chunk_windows": 0}
    assert list(settings.incoming_dir.iterdir()) == []


def test_caps_follow_the_settings(db, settings, embedder) -> None:
    before = state(db, settings)
    with pytest.raises(IngestError, match=r"en fazla 30 satır okunabiliyor.*XLSX_MAX_ROWS"):
        ingest_file(db, settings.replace(xlsx_max_rows=30), embedder, officefiles.staff_xlsx(), filename="a.xlsx",
                    roles=["ik"])
    with pytest.raises(IngestError, match=r"en fazla 100 hücre.*XLSX_MAX_CELLS"):
        ingest_file(db, settings.replace(xlsx_max_cells=100), embedder, officefiles.staff_xlsx(), filename="a.xlsx",
                    roles=["ik"])
    with pytest.raises(IngestError, match=r"en fazla 3 slayt.*PPTX_MAX_SLIDES"):
        ingest_file(db, settings.replace(pptx_max_slides=3), embedder, officefiles.training_pptx(), filename="a.pptx",
                    roles=["isg"])
    assert state(db, settings) == before
    # its 45 rows and 168 cells, the hidden sheet's 2 rows and 4 cells included (counted in the package)
    assert ingest_file(db, settings.replace(xlsx_max_rows=45, xlsx_max_cells=168), embedder,
                       officefiles.staff_xlsx(), filename="a.xlsx", roles=["ik"]).chunks > 0


def test_the_package_caps_are_the_word_ones() -> None:
    """DOCX_MAX_UNPACKED_MB bounds every Office package, told by the ZIP's directory."""
    limits = SheetLimits.of(Settings(docx_max_unpacked_mb=2))
    with pytest.raises(ExcelTooLarge, match=r"Bu Excel dosyası açıldığında .* en fazla 2 MB .*DOCX_MAX_UNPACKED_MB"):
        extract_sheets(officefiles.zip_bomb_xlsx(3), limits)
    with pytest.raises(PowerPointTooLarge, match=r"en fazla 2 slayt .*PPTX_MAX_SLIDES"):
        extract_slides(officefiles.slides_pptx(3), SlideLimits.of(Settings(pptx_max_slides=2)))


def test_formats_are_told_by_content() -> None:
    assert detect_format(officefiles.staff_xlsx()) == "xlsx" and detect_format(officefiles.training_pptx()) == "pptx"
    assert detect_format(officefiles.truncated_xlsx()) == "xlsx" and detect_format(officefiles.truncated_pptx()) == "pptx"
    assert check_upload(officefiles.staff_xlsx(), "liste") == "xlsx"  # no suffix: the content decides


# ----------------------------------------------------------------------------- bombs in bounded memory

READ_IN_CHILD = """
import json, resource, sys
from ragcore.documents import UnusableFile, extract_sheets, extract_slides
resource.setrlimit(resource.RLIMIT_CPU, (120, resource.getrlimit(resource.RLIMIT_CPU)[1]))
data = open(sys.argv[1], "rb").read()
mapped = int(open("/proc/self/statm").read().split()[0]) * resource.getpagesize()
resource.setrlimit(resource.RLIMIT_AS, (mapped + 2 * 1024**3, resource.getrlimit(resource.RLIMIT_AS)[1]))
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
try:
    read = extract_sheets if sys.argv[1].endswith(".xlsx") else extract_slides
    outcome = {"pages": [page.text for page in read(data).pages]}
except UnusableFile as exc:
    outcome = {"refused": str(exc)}
outcome["growth_mb"] = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
print(json.dumps(outcome))
"""
# Generous: the counting pass holds a 64 KB read buffer and the parser's state (measured: 0.25 MB
# for the shared-strings bomb, 0 for the paragraph bomb), where openpyxl took 343 MB (and 70 s)
# for the same shared strings and python-pptx 896 MB for the same paragraphs.
MEMORY_BOUND_MB = 100


def read_in_child(data: bytes, tmp_path: Path, suffix: str) -> dict:
    path = tmp_path / f"bomba{suffix}"
    path.write_bytes(data)
    run = subprocess.run([sys.executable, "-c", READ_IN_CHILD, str(path)], cwd=REPO, capture_output=True, text=True,
                         timeout=600)
    assert run.returncode == 0, f"the reader died (exit {run.returncode}): {run.stderr[-2000:]}"
    return json.loads(run.stdout)


def test_a_shared_strings_bomb_is_refused_before_openpyxl_loads_it(tmp_path) -> None:
    """1.4 million different shared strings (2.8 million XML nodes: under the node cap), 160 MB
    unpacked in a 4 MB file: refused while counting, by the cells cap."""
    data = officefiles.shared_strings_bomb()
    assert len(data) < 5_000_000
    outcome = read_in_child(data, tmp_path, ".xlsx")
    assert outcome.get("refused", "").startswith("Bu Excel dosyası çok büyük: en fazla 1.000.000 paylaşılan metin"), outcome
    assert "XLSX_MAX_CELLS" in outcome["refused"]
    assert outcome["growth_mb"] < MEMORY_BOUND_MB, outcome


def test_a_paragraph_bomb_in_a_slide_is_refused_before_python_pptx_parses_it(tmp_path) -> None:
    data = officefiles.paragraph_bomb_pptx(3_000_000)
    assert len(data) < 200_000
    outcome = read_in_child(data, tmp_path, ".pptx")
    assert "XML öğesi" in outcome.get("refused", "") and "DOCX_MAX_ELEMENTS" in outcome["refused"], outcome
    assert outcome["refused"].startswith("Bu PowerPoint dosyası çok büyük")
    assert outcome["growth_mb"] < MEMORY_BOUND_MB, outcome


def test_rows_padded_far_and_wide_stay_in_bounded_memory(tmp_path) -> None:
    """A row at 1,048,576 (a million empty rows yielded before it) and rows padded to column XFD
    under a forged dimension: refused while reading, counted as openpyxl yields them."""
    far = read_in_child(officefiles.far_row(), tmp_path, ".xlsx")
    assert "XLSX_MAX_ROWS" in far.get("refused", "") and far["growth_mb"] < MEMORY_BOUND_MB, far
    wide = read_in_child(officefiles.far_columns(), tmp_path, ".xlsx")
    assert "XLSX_MAX_CELLS" in wide.get("refused", "") and wide["growth_mb"] < MEMORY_BOUND_MB, wide


# ----------------------------------------------------------------------------- the API


@pytest.mark.parametrize(("name", "data", "status", "code"), [
    ("gizli.xlsx", officefiles.encrypted_office(), 422, "encrypted_xlsx"),
    ("gizli.pptx", officefiles.encrypted_office(), 422, "encrypted_pptx"),
    ("eski.xls", officefiles.old_xls(), 415, "old_office_format"),
    ("makro.xlsm", officefiles.macro_xlsx(), 415, "macro_xlsx"),
    ("makro.pptm", officefiles.macro_pptx(), 415, "macro_pptx"),
    ("yarim.xlsx", officefiles.truncated_xlsx(), 422, "corrupt_xlsx"),
    ("yarim.pptx", officefiles.truncated_pptx(), 422, "corrupt_pptx"),
    ("genis.xlsx", officefiles.wide_row(), 413, "xlsx_too_large"),
    ("liste.pptx", officefiles.slide_list_bomb(1001), 413, "pptx_too_large"),
])
def test_the_api_refuses_bad_office_files_with_their_codes(db, settings, name, data, status, code) -> None:
    with api_app(db, settings, make_test_embedder()) as api:
        admin = person(api.db, "yonetici", "admin")
        response = api.client.post("/v1/documents", headers=bearer(admin), data={"roles": "isg"},
                                   files={"file": (name, data, "application/octet-stream")})
        assert response.status_code == status and error_code(response) == code, response.text
        with api.db.connection() as conn:
            assert conn.execute("SELECT count(*) FROM jobs").fetchone()[0] == 0


def test_the_api_takes_a_workbook_and_cites_its_rows(db, settings, embedder) -> None:
    with api_app(db, settings, embedder) as api:
        admin = person(api.db, "yonetici", "admin")
        response = api.client.post("/v1/documents", headers=bearer(admin), data={"roles": "ik"},
                                   files={"file": ("izinler.xlsx", officefiles.staff_xlsx(), "application/octet-stream")})
        assert response.status_code == 202, response.text
        jobs.run_worker(api.settings, wait=False, embedder_factory=lambda: embedder)
        listed = api.client.get("/v1/documents", headers=bearer(admin)).json()
        document = listed["documents"][0]
        assert document["file_format"] == "xlsx" and document["hidden_parts"] == ["Maaşlar"]


# ----------------------------------------------------------------------------- the command line


def test_the_cli_ingests_a_workbook_and_says_what_was_hidden(cli, tmp_path) -> None:
    path = tmp_path / "izinler.xlsx"
    path.write_bytes(officefiles.staff_xlsx())
    code, out, err = cli("ingest", str(path), "--roles", "ik")
    assert code == 0, err
    assert "3 çalışma sayfası" in out and "gizli olduğu için okunmayan sayfalar: Maaşlar" in out
    code, listed, _ = cli("documents", "--json")
    assert [d["file_format"] for d in listed] == ["xlsx"]
    code, chunks, _ = cli("chunks", listed[0]["document_id"], "--json")
    assert all(c["locator"].startswith("Personel · satır ") for c in chunks), chunks
    path.with_suffix(".xls").write_bytes(officefiles.encrypted_office())
    code, _, err = cli("ingest", str(path.with_suffix(".xls")), "--roles", "ik")
    assert code == 1 and "Excel dosyası şifreli" in err


# ----------------------------------------------------------------------------- the document card


def test_the_card_names_the_hidden_sheets_and_counts_sheets(db, settings, embedder, monkeypatch) -> None:
    from streamlit.testing.v1 import AppTest

    from ragcore.access import users
    from tests.app_support import reset_app, set_app_env

    set_app_env(monkeypatch, DATABASE_URL=settings.database_url, DATA_DIR=str(settings.data_dir),
                ADMIN_PASSWORD="yonetici-parola-1")
    reset_app(db)
    try:
        ingest_file(db, settings, embedder, officefiles.staff_xlsx(), filename="izinler.xlsx", roles=["ik"])
        users.create_user(db, "ayse", "ik", "ayse-parola-1")
        at = AppTest.from_file(str(REPO / "app.py"), default_timeout=120)
        at.run()
        at.text_input(key="login_username").input("ayse")
        at.text_input(key="login_password").input("ayse-parola-1")
        next(b for b in at.button if b.label == "Giriş yap").click()
        at.run()
        at.switch_page("pages/documents.py").run()
        assert not at.exception, at.exception
        captions = [c.value.replace("\\", "") for c in at.caption]  # the card escapes Markdown
        assert any(c.startswith("izinler.xlsx · 3 çalışma sayfası · ") for c in captions), captions
        assert "Gizli olduğu için okunmayan sayfalar: Maaşlar" in captions, captions
        assert "Boş çalışma sayfaları: 2" in captions, captions
    finally:
        reset_app(db)


# ----------------------------------------------------------------------------- the source dialog


def _show_office(ctx, user, source) -> None:
    """The dialog's body for one source (st.dialog itself needs a browser to open)."""
    from ragcore.documents import get_document
    from ui.sources import _office_dialog

    _office_dialog(ctx, user, get_document(ctx.db, source.document_id, user.role), source, (), "s1")


def test_the_source_dialogs_show_the_cited_rows_and_the_slide_with_its_notes(db, settings, embedder) -> None:
    from streamlit.testing.v1 import AppTest

    from ragcore.access import users
    from ui.context import AppContext

    ingest_file(db, settings, embedder, officefiles.staff_xlsx(), filename="izinler.xlsx", roles=["isg"])
    ingest_file(db, settings, embedder, officefiles.training_pptx(), filename="egitim.pptx", roles=["isg"])
    user = users.create_user(db, "ayse", "isg", "ayse-parola-1")
    ctx = AppContext(settings=settings, db=db)
    found = search(db, embedder, "Kemal Aksoy yıllık izin", "isg", k=5, mode="lexical", settings=settings)
    rows = next(s for s in found if s.locator_kind == LOCATOR_ROWS)
    at = AppTest.from_function(_show_office, args=(ctx, user, rows)).run()
    assert not at.exception, at.exception
    assert [c.value.replace("\\", "") for c in at.caption] == [f"{rows.locator_label} · izinler.xlsx"]
    assert "Kemal Aksoy" in " ".join(m.value for m in at.markdown)
    assert [b.label.replace("\\", "") for b in at.get("download_button")] == ["Dosyanın tamamı (Excel)"]

    found = search(db, embedder, "baretin üretim tarihi nerede yazar", "isg", k=5, mode="lexical", settings=settings)
    slide = next(s for s in found if s.locator_kind == LOCATOR_SLIDE and "iç kısımda" in s.text)
    assert slide.locator_label == "slayt 2"
    at = AppTest.from_function(_show_office, args=(ctx, user, slide)).run()
    assert not at.exception, at.exception
    assert any(c.value.replace("\\", "").startswith("Slayt 2 / 4 · egitim.pptx") for c in at.caption), at.caption
    shown = " ".join(m.value for m in at.markdown).replace("\\", "")  # highlight() escapes Markdown
    assert "Konuşmacı notları:" in shown and "iç kısımda yazar" in shown
    assert [b.label.replace("\\", "") for b in at.get("download_button")] == ["Sununun tamamı (PowerPoint)"]


# ----------------------------------------------------------------------------- migration 026


def test_migration_026_upgrades_stored_documents_exactly(db, settings, embedder) -> None:
    """The step from the schema before 026 (file_format pdf/docx, no hidden_parts), run on a
    database holding a document: the row is unchanged, its hidden_parts empty, and the two new
    formats are allowed. Rolled back at the end (the fixture's schema has 026 applied)."""
    from ragcore.store.migrations import CORE_SQL

    ingest_file(db, settings, embedder, officefiles.training_pptx(), filename="egitim.pptx", roles=["isg"])
    step = (CORE_SQL / "026_office_formats.sql").read_text(encoding="utf-8")
    with db.connection() as conn:
        conn.execute("UPDATE documents SET file_format = 'docx'")  # the old schema knew pdf and docx only
        conn.execute("ALTER TABLE documents DROP COLUMN hidden_parts")
        conn.execute("ALTER TABLE documents DROP CONSTRAINT documents_file_format_known")
        conn.execute("ALTER TABLE documents ADD CONSTRAINT documents_file_format_known "
                     "CHECK (file_format IN ('pdf', 'docx'))")
        before = conn.execute("SELECT to_jsonb(d) FROM documents d").fetchall()
        conn.execute(step)
        after = conn.execute("SELECT to_jsonb(d) - 'hidden_parts', d.hidden_parts FROM documents d").fetchall()
        assert [(row[0], []) for row in before] == [tuple(row) for row in after]
        conn.execute("UPDATE documents SET file_format = 'xlsx'")
        conn.execute("UPDATE documents SET file_format = 'pptx'")
        conn.rollback()
