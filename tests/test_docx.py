"""Word files (.docx, issue 23): read into sections, chunked like the same text through the PDF
path's chunker, cited by heading and paragraph, found by retrieval, and refused (with nothing
stored) when they cannot be used. Fixtures are built with python-docx at test time (tests/docxs.py).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from ragcore import jobs
from ragcore.cli import main as cli_main
from ragcore.core import LOCATOR_PAGE, LOCATOR_SECTION, Page, Settings, Source
from ragcore.documents import (
    WORD_HAS_NO_PAGES,
    DocumentNotFound,
    DuplicateDocument,
    IngestError,
    PageNotFound,
    WordLimits,
    WordTooLarge,
    chunk_pages,
    document_chunks,
    document_file,
    extract_sections,
    get_document,
    ingest_file,
    locate,
    page_image,
    page_pdf,
    read_page,
    stored_path,
)
from ragcore.retrieval import search
from tests import docxs, pdfs
from tests.retrieval_support import make_test_embedder
from tests.test_ingest import check_lexical_index, state

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def embedder():
    return make_test_embedder()


def regulation_chunks(size: int = 1000, overlap: int = 100):
    text = extract_sections(docxs.regulation_docx())
    return text, locate(chunk_pages(text.pages, size, overlap), text)


# ----------------------------------------------------------------------------- reading and chunking


def test_sections_keep_headings_articles_and_words_own_paragraph_numbers() -> None:
    text = extract_sections(docxs.regulation_docx())
    assert text.headings == ["ÖRNEK İŞ GÜVENLİĞİ YÖNETMELİĞİ", "BİRİNCİ BÖLÜM", "Amaç, Kapsam ve Tanımlar",
                             "İKİNCİ BÖLÜM", "Yükümlülükler"]
    assert [page.number for page in text.pages] == [1, 2, 3, 4, 5] and text.title == "Örnek İş Güvenliği Yönetmeliği"
    lines = "\n".join(page.text for page in text.pages).split("\n")
    assert lines == docxs.regulation_lines()  # "(1)", "(2)" drawn by Word are in the text, restarting per list


@pytest.mark.parametrize(("size", "overlap"), [(1000, 100), (120, 20)])
def test_docx_chunks_like_the_same_text_through_the_pdf_chunker(size: int, overlap: int) -> None:
    """Same article boundaries and texts as `chunk_pages` over the text as one PDF page; at a
    small size a long article splits at its "(n)" paragraphs in both."""
    _, chunks = regulation_chunks(size, overlap)
    as_pdf = chunk_pages([Page(1, "\n".join(docxs.regulation_lines()))], size, overlap)
    assert [(c.article, c.text) for c in chunks if c.article] == [(c.article, c.text) for c in as_pdf if c.article]
    assert [c.article for c in chunks if c.article] == ["Madde 1", "Madde 2", "Madde 3", "Madde 4"] or size < 1000
    if size < 1000:
        assert any(c.article == "Madde 3" and c.text.startswith("(2) Hasarlı baret") for c in chunks)


def test_each_chunk_is_cited_by_its_heading_and_paragraphs() -> None:
    text, chunks = regulation_chunks()
    by_article = {c.article: c for c in chunks}
    assert by_article["Madde 1"].locator == "§ Amaç, Kapsam ve Tanımlar · paragraf 1–2"  # "Amaç", then the article
    assert by_article["Madde 2"].locator == "§ Amaç, Kapsam ve Tanımlar · paragraf 3–6"
    assert by_article["Madde 3"].locator == "§ Yükümlülükler · paragraf 1–4"
    assert by_article["Madde 4"].locator == "§ Yükümlülükler · paragraf 5–6"
    # the chunk's pages are sections: "Madde 1" carries the headings above it, from the title on
    assert (by_article["Madde 1"].page_start, by_article["Madde 1"].page_end) == (1, 3)
    joined = "\n".join(page.text for page in text.pages)
    assert all(joined[c.char_start:c.char_end] == c.text for c in chunks)


def test_table_rows_are_paragraphs() -> None:
    text = extract_sections(docxs.with_table())
    assert text.pages[0].text == "Kişisel koruyucu donanım listesi\nDonanım | Değiştirme süresi\nBaret | beş yıl"


# ----------------------------------------------------------------------------- ingest, retrieval, citations


def test_docx_ingests_with_its_format_locators_and_stages(db, settings, embedder) -> None:
    events: list[tuple[str, int, int]] = []
    data = docxs.regulation_docx()
    result = ingest_file(db, settings, embedder, data, filename="yonetmelik.docx", roles=["isg"],
                         progress=lambda *e: events.append(e))
    assert result.file_format == "docx" and result.as_dict()["file_format"] == "docx"
    assert result.pages == 5 and result.title == "Örnek İş Güvenliği Yönetmeliği"
    assert list(dict.fromkeys(e[0] for e in events)) == ["read_word", "chunk", "embed", "store"]
    with db.connection() as conn:
        sha, file_format, pages = conn.execute("SELECT sha256, file_format, page_count FROM documents").fetchone()
        unlocated = conn.execute("SELECT count(*) FROM chunks WHERE locator IS NULL").fetchone()[0]
    assert (file_format, pages, unlocated) == ("docx", 5, 0)
    assert stored_path(settings, sha, "docx").read_bytes() == data and stored_path(settings, sha, "docx").suffix == ".docx"
    assert not stored_path(settings, sha).exists()  # no "<sha>.pdf"
    doc = get_document(db, result.document_id, "isg")
    assert doc.file_format == "docx" and document_file(settings, doc, "isg") == stored_path(settings, sha, "docx")
    assert all(c.locator.startswith("§ ") for c in document_chunks(db, result.document_id, "isg"))
    check_lexical_index(db)


def test_questions_find_the_docx_articles_with_section_citations(db, settings, embedder) -> None:
    ingest_file(db, settings, embedder, docxs.regulation_docx(), filename="yonetmelik.docx", roles=["isg"])
    ingest_file(db, settings, embedder, pdfs.law_pdf(), filename="yonetmelik.pdf", roles=["isg"])
    expected = {"Baretler ne zaman kontrol edilir?": ("Madde 3", "§ Yükümlülükler · paragraf 1–4"),
                "Düşmeye karşı koruma eğitimi ne sıklıkla verilir?": ("Madde 4", "§ Yükümlülükler · paragraf 5–6"),
                "Ev hizmetlerinde çalışanlar yönetmeliğin kapsamında mı?": ("Madde 2",
                                                                            "§ Amaç, Kapsam ve Tanımlar · paragraf 3–6")}
    for question, (article, label) in expected.items():
        top = [s for s in search(db, embedder, question, "isg", k=3, mode="rrf", settings=settings)
               if s.filename.endswith(".docx")][0]
        assert (top.article, top.locator_kind, top.locator_label) == (article, LOCATOR_SECTION, label), question
        assert top.as_dict()["locator_kind"] == "section" and top.as_dict()["locator"] == label
    pdf_source = next(s for s in search(db, embedder, "Yonetmeligin amaci", "isg", k=10, mode="lexical",
                                        settings=settings) if s.filename.endswith(".pdf"))
    assert pdf_source.locator_kind == LOCATOR_PAGE and pdf_source.locator_label == pdf_source.page_label
    assert search(db, embedder, "Baretler ne zaman kontrol edilir?", "ik", k=5, mode="rrf", settings=settings) == []


def test_the_cited_section_is_read_back_and_has_no_page_pdf(db, settings, embedder) -> None:
    result = ingest_file(db, settings, embedder, docxs.regulation_docx(), filename="yonetmelik.docx", roles=["isg"])
    doc = get_document(db, result.document_id, "admin")
    section = read_page(settings, doc, 5, "isg")
    assert section.heading == "Yükümlülükler" and section.page_count == 5
    assert section.text.startswith("Yükümlülükler\nBaret kullanımı\nMADDE 3 –")
    with pytest.raises(LookupError):  # DocumentNotFound: ik may not read it
        read_page(settings, doc, 5, "ik")
    with pytest.raises(PageNotFound, match="6. kısım yok"):
        read_page(settings, doc, 6, "isg")
    with pytest.raises(PageNotFound, match="sayfası yok"):
        page_pdf(settings, doc, 1, "isg")


def test_a_word_file_has_no_page_image_and_the_role_is_checked_first(db, settings, embedder) -> None:
    """The page image and the one-page PDF of a .docx are refused with one sentence that says what
    to open instead; a role that may not read the document learns only "not found", word for
    word what a missing document gives, before any word about its format."""
    result = ingest_file(db, settings, embedder, docxs.regulation_docx(), filename="yonetmelik.docx", roles=["isg"])
    doc = get_document(db, result.document_id, "admin")
    refusals = []
    for read in (lambda role: page_image(settings, doc, 1, role, "Baret"), lambda role: page_pdf(settings, doc, 1, role)):
        with pytest.raises(PageNotFound) as refused:
            read("isg")
        refusals.append(str(refused.value))
        with pytest.raises(DocumentNotFound) as hidden:
            read("ik")
        assert str(hidden.value) == str(DocumentNotFound(result.document_id + 100)) and "Word" not in str(hidden.value)
    assert refusals == [WORD_HAS_NO_PAGES] * 2
    assert "Kısmı aç" in WORD_HAS_NO_PAGES and "indirin" in WORD_HAS_NO_PAGES  # what to do instead


def test_cli_json_sources_carry_the_locator_kind(db, settings, embedder, monkeypatch, capsys, tmp_path) -> None:
    ingest_file(db, settings, embedder, docxs.regulation_docx(), filename="yonetmelik.docx", roles=["isg"])
    for name, value in {"DATABASE_URL": settings.database_url, "DATA_DIR": str(settings.data_dir),
                        "EMBED_BACKEND": "use", "LLM_BACKEND": "extractive"}.items():
        monkeypatch.setenv(name, value)
    monkeypatch.chdir(tmp_path)
    assert cli_main(["search", "Baretler ne zaman kontrol edilir?", "--role", "isg", "--json"]) == 0
    results = json.loads(capsys.readouterr().out)["results"]
    assert results and all(r["locator_kind"] == "section" and r["locator"].startswith("§ ") for r in results)
    assert cli_main(["documents", "--json"]) == 0
    assert [d["file_format"] for d in json.loads(capsys.readouterr().out)] == ["docx"]


def test_source_labels_name_the_section_instead_of_a_page() -> None:
    from ui.sources import page_button_label, source_label

    word = Source(1, 1, 1, "Yönetmelik", "y.docx", 5, 5, "Madde 3", 0.5, "metin",
                  locator_kind=LOCATOR_SECTION, locator="§ Yükümlülükler · paragraf 1–4")
    pdf = Source(1, 2, 2, "Kanun", "k.pdf", 7, 7, "Madde 10", 0.5, "metin")
    assert source_label(word) == "Yönetmelik · Madde 3 · § Yükümlülükler · paragraf 1–4"
    assert source_label(pdf) == "Kanun · Madde 10 · s. 7" and page_button_label(pdf) == "Sayfayı aç · s. 7"
    assert page_button_label(word) == "Kısmı aç" and "s." not in source_label(word)


# ----------------------------------------------------------------------------- refusals


BAD_DOCX = {
    "renamed binary": (docxs.renamed_binary, r"PDF, Word \(\.docx\), Excel \(\.xlsx\) ya da PowerPoint \(\.pptx\) belgesi değil"),
    "password-protected": (docxs.encrypted_docx, "parola ile korunuyor"),
    "old .doc": (docxs.old_doc, "eski Word biçiminde"),
    "truncated": (docxs.truncated_docx, "bozuk ya da eksik"),
    "broken XML": (docxs.broken_xml_docx, "bozuk ya da eksik"),
    "a ZIP that is no Word file": (docxs.zip_without_document, "Word belgesi değil"),
    "no text": (docxs.empty_docx, "okunacak metin yok"),
    "a PDF named .docx": (pdfs.law_pdf, "içeriği bir PDF"),
    "120 MB of empty paragraphs": (docxs.empty_paragraph_bomb, r"en fazla 200\.000 paragraf .*DOCX_MAX_PARAGRAPHS"),
    "nested 200 deep": (lambda: docxs.deeply_nested(200), r"100 düzeyden derin \(DOCX_MAX_DEPTH\)"),
    "a DOCTYPE": (docxs.with_doctype, "DOCTYPE bildirimi var"),
}


@pytest.mark.parametrize("case", BAD_DOCX)
def test_bad_docx_is_refused_and_nothing_written(db, settings, embedder, case) -> None:
    ingest_file(db, settings, embedder, docxs.regulation_docx(), filename="ok.docx", roles=["isg"])  # a baseline
    before = state(db, settings)
    make, message = BAD_DOCX[case]
    with pytest.raises(IngestError, match=message):
        ingest_file(db, settings, embedder, make(), filename="belge.docx", roles=["isg"])
    assert state(db, settings) == before


def test_a_docx_named_pdf_is_refused(db, settings, embedder) -> None:
    with pytest.raises(IngestError, match=r"“\.pdf” ile bitiyor ama içeriği bir Word"):
        ingest_file(db, settings, embedder, docxs.regulation_docx(), filename="yonetmelik.pdf", roles=["isg"])
    assert state(db, settings)["counts"]["documents"] == 0


def test_duplicate_docx_is_refused_naming_the_document(db, settings, embedder) -> None:
    data = docxs.regulation_docx()
    first = ingest_file(db, settings, embedder, data, filename="yonetmelik.docx", roles=["isg"])
    before = state(db, settings)
    with pytest.raises(DuplicateDocument) as info:
        ingest_file(db, settings, embedder, data, filename="kopya.docx", roles=["ik"])
    assert info.value.public_id == first.public_id and state(db, settings) == before


def test_background_upload_of_a_docx_and_its_refusals(db, settings, embedder) -> None:
    """What the first bytes tell (a renamed binary, a password-protected .docx, a name claiming
    the other format) is refused before staging: no job, no file. A corrupt .docx fails its job
    for good with the Turkish message and leaves no staged file; a good one is staged as
    <job id>.docx and stored."""
    for data, name, message in ((docxs.renamed_binary(), "resim.docx", "PDF, Word"),
                                (docxs.encrypted_docx(), "gizli.docx", "parola ile korunuyor"),
                                (docxs.regulation_docx(), "yonetmelik.pdf", "içeriği bir Word")):
        with pytest.raises(jobs.JobError, match=message):
            jobs.submit_ingest(db, settings, data, filename=name, roles=["isg"])
    with db.connection() as conn:
        assert conn.execute("SELECT count(*) FROM jobs").fetchone()[0] == 0
    assert not settings.incoming_dir.exists() or list(settings.incoming_dir.iterdir()) == []

    bad = jobs.submit_ingest(db, settings, docxs.truncated_docx(), filename="yarim.docx", roles=["isg"])
    good = jobs.submit_ingest(db, settings, docxs.regulation_docx(), filename="yonetmelik.docx", roles=["isg"])
    assert jobs.staged_path(settings, good.id, "docx").is_file() and not jobs.staged_path(settings, good.id).exists()
    jobs.run_worker(settings, wait=False, embedder_factory=lambda: embedder)
    failed, done = jobs.find_job(db, bad.public_id), jobs.find_job(db, good.public_id)
    assert failed.status == "failed" and "bozuk ya da eksik" in failed.error and failed.attempts == 1
    assert done.status == "succeeded" and done.result["file_format"] == "docx", done.error
    assert list(settings.incoming_dir.iterdir()) == []
    assert "başlık" in jobs.get_kind(jobs.INGEST).summary(done.result)
    with db.connection() as conn:
        assert conn.execute("SELECT filename, file_format FROM documents").fetchall() == [("yonetmelik.docx", "docx")]


def test_the_upload_handler_takes_a_docx_and_refuses_a_renamed_binary(db, settings, embedder) -> None:
    """The browser's path (ui.upload.upload_document): a .docx is queued and stored; a binary
    renamed to .docx is refused at once in Turkish, with nothing staged or queued."""
    from ragcore.access import users
    from ui import upload
    from ui.context import AppContext

    ctx = AppContext(settings=settings, db=db)
    admin = users.create_user(db, "yonetici", "admin", "yonetici-parola")
    refused = upload.upload_document(ctx, admin, "resim.docx", docxs.renamed_binary(), ["isg"])
    assert not refused.ok and "bu biçimlerden biri değil" in refused.message
    assert not settings.incoming_dir.exists() or list(settings.incoming_dir.iterdir()) == []
    queued = upload.upload_document(ctx, admin, "yonetmelik.docx", docxs.regulation_docx(), ["isg"])
    assert queued.ok, queued.message
    jobs.run_worker(settings, wait=False, embedder_factory=lambda: embedder)
    assert jobs.get_job(db, queued.job_id).status == "succeeded"
    with db.connection() as conn:
        assert conn.execute("SELECT count(*) FROM jobs").fetchone()[0] == 1
        assert conn.execute("SELECT file_format FROM documents").fetchall() == [("docx",)]


def _show_section(ctx, user, source) -> None:
    """The dialog's body for one source (st.dialog itself needs a browser to open)."""
    from ragcore.documents import get_document
    from ui.sources import _section_dialog

    _section_dialog(ctx, user, get_document(ctx.db, source.document_id, user.role), source, (), "s1")


def test_the_source_dialog_of_a_docx_shows_the_cited_section(db, settings, embedder) -> None:
    """What "Kısmı aç" opens for a Word source: the cited section's heading and text (not the
    heading-only section its chunk starts in), the whole .docx to download, no one-page PDF."""
    from streamlit.testing.v1 import AppTest

    from ragcore.access import users
    from ui.context import AppContext

    ingest_file(db, settings, embedder, docxs.regulation_docx(), filename="yonetmelik.docx", roles=["isg"])
    user = users.create_user(db, "ayse", "isg", "ayse-parola-1")
    source = search(db, embedder, "Baretler ne zaman kontrol edilir?", "isg", k=1, mode="rrf", settings=settings)[0]
    at = AppTest.from_function(_show_section, args=(AppContext(settings=settings, db=db), user, source)).run()
    assert not at.exception, at.exception
    captions = [c.value for c in at.caption]
    assert any(c.startswith("§ Yükümlülükler · kısım 5 / 5 · yonetmelik") for c in captions), captions
    shown = " ".join(m.value for m in at.markdown)
    assert "Baretler her vardiya başında" in shown and "Eğitim" in shown
    assert "PDF" not in " ".join(b.label for b in at.get("download_button"))


# ----------------------------------------------------------------------------- bounds (issue 36)
# A few hundred KB of .docx can unpack to gigabytes of tree, or to minutes of work per paragraph.
# Bombs that would take the machine on code without the caps are read in a child process that
# reports its peak RSS growth (ru_maxrss after the read minus before it); the child's address
# space is limited to 2 GB more than it starts with and its CPU to 120 s, so on such code a
# bomb ends in a MemoryError or SIGXCPU (and the test fails) instead of taking the machine.

READ_IN_CHILD = """
import json, resource, sys
from ragcore.documents.word import WordError, extract_sections
resource.setrlimit(resource.RLIMIT_CPU, (120, resource.getrlimit(resource.RLIMIT_CPU)[1]))
data = open(sys.argv[1], "rb").read()
mapped = int(open("/proc/self/statm").read().split()[0]) * resource.getpagesize()
resource.setrlimit(resource.RLIMIT_AS, (mapped + 2 * 1024**3, resource.getrlimit(resource.RLIMIT_AS)[1]))
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
try:
    outcome = {"pages": [page.text for page in extract_sections(data).pages]}
except WordError as exc:
    outcome = {"refused": str(exc)}
outcome["growth_mb"] = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
print(json.dumps(outcome))
"""
# Generous: the counting pass holds a 64 KB read buffer and the parser's state (measured: 1 MB
# for the 120 MB bomb), where python-docx's tree of the same bomb took 2.7 GB.
MEMORY_BOUND_MB = 100


def read_in_child(data: bytes, tmp_path: Path) -> dict:
    path = tmp_path / "belge.docx"
    path.write_bytes(data)
    run = subprocess.run([sys.executable, "-c", READ_IN_CHILD, str(path)], cwd=REPO, capture_output=True, text=True,
                         timeout=600)
    assert run.returncode == 0, f"the reader died (exit {run.returncode}): {run.stderr[-2000:]}"
    return json.loads(run.stdout)


def test_an_empty_paragraph_bomb_is_refused_in_bounded_memory(tmp_path) -> None:
    """The probe's bomb: 120 MB of `<w:p/>` in a 220 KB file (under the 512 MB unpacked cap
    of old) took python-docx to 3 GB; it is refused while counting, with the cap's setting."""
    data = docxs.empty_paragraph_bomb(120)
    assert len(data) < 300_000
    outcome = read_in_child(data, tmp_path)
    assert outcome.get("refused", "").startswith("Bu Word dosyası çok büyük: en fazla 200.000 paragraf"), outcome
    assert "DOCX_MAX_PARAGRAPHS" in outcome["refused"] and "bölerek" in outcome["refused"]
    assert outcome["growth_mb"] < MEMORY_BOUND_MB, outcome


def test_attributes_count_towards_the_element_cap(tmp_path) -> None:
    """20,000 paragraphs of 200 attributes each (4 million nodes of tree) stay under the
    paragraph cap; the element count, which counts attributes, refuses them."""
    outcome = read_in_child(docxs.attribute_bomb(), tmp_path)
    assert "XML öğesi" in outcome.get("refused", "") and "DOCX_MAX_ELEMENTS" in outcome["refused"], outcome
    assert outcome["growth_mb"] < MEMORY_BOUND_MB, outcome


def test_a_cell_spanning_300_million_columns_is_read_once(tmp_path) -> None:
    """python-docx's `row.cells` gives a spanning cell once per column: a 36 KB file, gigabytes."""
    outcome = read_in_child(docxs.spanning_cell(300_000_000), tmp_path)
    assert outcome.get("pages") == ["MADDE 1 – Donanım listesi.\nBaret"], outcome
    assert outcome["growth_mb"] < MEMORY_BOUND_MB, outcome


def test_a_style_based_on_itself_ends(tmp_path) -> None:
    """Two styles based on each other: python-docx's base_style walk never ends; the style is
    read once, and the paragraph is plain text."""
    outcome = read_in_child(docxs.style_cycle(), tmp_path)
    assert outcome.get("pages") == ["MADDE 1 – Bu paragrafın biçemi kendi kendine dayanıyor."], outcome


def test_100000_empty_paragraphs_cost_one_style_lookup(monkeypatch) -> None:
    """The probe's 37 KB file held the worker 218 s: python-docx looked up the default style for
    every paragraph (scanning every style each time). The styles are read once per document now;
    the output is the same: a heading and its 100 text paragraphs, numbered 1-100 (bench.word_bombs
    times it)."""
    from docx.oxml.styles import CT_Styles

    lookups = []
    for name in ("default_for", "get_by_id"):
        original = getattr(CT_Styles, name)
        monkeypatch.setattr(CT_Styles, name, lambda self, *a, _f=original: lookups.append(a) or _f(self, *a))
    text = extract_sections(docxs.sparse_paragraphs(100_000, every=1000))
    assert len(lookups) <= 1, f"{len(lookups)} style look-ups for one document"
    assert text.headings == ["BİRİNCİ BÖLÜM"]
    assert text.pages[0].text.split("\n") == ["BİRİNCİ BÖLÜM", *(f"Paragraf {n}." for n in range(1, 101))]
    assert [p.number for p in text.paragraphs] == list(range(101))


@pytest.mark.parametrize("depth", [200, 100_000])
def test_deep_nesting_is_refused_naming_the_cap(depth: int) -> None:
    """Word writes a few dozen levels; 200 passed python-docx, 100,000 failed as "bozuk" at
    libxml2's own 256. Both are refused as too deep, with the setting named."""
    with pytest.raises(WordTooLarge, match=r"iç içe yapılar 100 düzeyden derin \(DOCX_MAX_DEPTH\)"):
        extract_sections(docxs.deeply_nested(depth))


def test_a_column_merged_down_1000_rows_is_given_on_every_row() -> None:
    """A merged cell's text on every row it spans, as python-docx gives it, read in one pass:
    python-docx walks up row by row, recursively, and gave up (RecursionError, "bozuk") past a
    few hundred rows."""
    text = extract_sections(docxs.merged_column(1000))
    assert text.pages[0].text.split("\n") == [f"KKD | Kalem {n}" for n in range(1, 1001)]


def test_merged_cells_cannot_grow_the_text_past_its_cap() -> None:
    """A merged cell's text repeats on every row, so the text read can outgrow the file: the
    character cap counts what is read, merged cells and list numbers included."""
    data = docxs.merged_column(100, label="uzun " * 1000)
    with pytest.raises(WordTooLarge, match=r"en fazla 100\.000 karakter .*\(DOCX_MAX_CHARACTERS\)"):
        extract_sections(data, WordLimits.of(Settings(docx_max_characters=100_000)))
    assert len(extract_sections(data).pages[0].text) > 100_000  # under the default cap it is read


def test_forged_list_start_values_keep_labels_short() -> None:
    """A start value of 10**9 in roman numerals was a label of a million "M"s on every paragraph;
    start values are kept within Word's own range (up to 32,767)."""
    lines = extract_sections(docxs.numbered_from(10**9, "upperRoman", ["Bir", "İki", "Üç"])).pages[0].text.split("\n")
    assert [line.split(". ", 1)[1] for line in lines] == ["Bir", "İki", "Üç"]
    assert max(len(line) for line in lines) < 60 and len(set(lines)) == 3


def test_word_caps_follow_the_settings(db, settings, embedder) -> None:
    before = state(db, settings)
    with pytest.raises(IngestError, match=r"en fazla 10 paragraf okunabiliyor.*DOCX_MAX_PARAGRAPHS"):
        ingest_file(db, settings.replace(docx_max_paragraphs=10), embedder, docxs.regulation_docx(),
                    filename="yonetmelik.docx", roles=["isg"])
    assert state(db, settings) == before
    assert ingest_file(db, settings.replace(docx_max_paragraphs=17), embedder, docxs.regulation_docx(),
                       filename="yonetmelik.docx", roles=["isg"]).pages == 5  # its 17 paragraphs


def test_a_word_bomb_fails_its_job_for_good_and_stores_nothing(db, settings, embedder) -> None:
    """The bomb through the background upload: queued (its first bytes are a ZIP), then the job
    fails once, for good, with the Turkish reason; no document, no staged file."""
    job = jobs.submit_ingest(db, settings, docxs.empty_paragraph_bomb(120), filename="bomba.docx", roles=["isg"])
    jobs.run_worker(settings, wait=False, embedder_factory=lambda: embedder)
    failed = jobs.find_job(db, job.public_id)
    assert failed.status == "failed" and failed.attempts == 1, failed
    assert "en fazla 200.000 paragraf" in failed.error and "Dosyayı birkaç parçaya bölerek yükleyin." in failed.error
    assert state(db, settings)["counts"] == {"documents": 0, "chunks": 0, "postings": 0, "chunk_windows": 0}
    assert list(settings.incoming_dir.iterdir()) == []
