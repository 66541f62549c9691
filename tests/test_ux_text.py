"""The product's own words: Turkish numbers, document titles, re-flowed source text, which
words are bolded, the cited page, role names and the lab's column labels (issue 15)."""

from __future__ import annotations

import io
from datetime import UTC, datetime

import pytest
from pypdf import PdfReader, PdfWriter

from ragcore.core import (
    ROLES,
    count_of,
    format_date,
    format_duration,
    format_integer,
    format_megabytes,
    format_milliseconds,
    format_number,
    format_percent,
    reflow,
)
from ragcore.documents import (
    DocumentNotFound,
    PageNotFound,
    TitleError,
    clean_title,
    default_title,
    extract_pages,
    get_document,
    heading_title,
    ingest_pdf,
    page_filename,
    page_pdf,
    read_page,
    set_document_title,
    turkish_title_case,
)
from ragcore.embed import USEEmbedder
from ragcore.retrieval import COMMON_WORDS, highlight_terms, question_terms
from ragcore.store import Database
from tests import pdfs
from tests.conftest import LAW_4857, LAW_5510, LAW_6331
from ui import labels
from ui.upload import ROLE_HELP, roles_text, stored_roles


@pytest.fixture(scope="module")
def embedder() -> USEEmbedder:
    return USEEmbedder()  # the model the other app tests index with (one embedding space per database)


# ----------------------------------------------------------------------------- numbers


def test_turkish_number_formatting() -> None:
    assert format_number(0.926) == "0,926"
    assert format_number(12345.5, 1) == "12.345,5"
    assert format_integer(1924) == "1.924" and format_integer(-1500) == "-1.500"
    assert format_percent(0.926) == "%92,6"
    assert format_number(None) == format_number(float("nan")) == "—"
    assert format_duration(125) == "2 dk 5 sn" and format_duration(3720) == "1 sa 2 dk"
    assert format_milliseconds(120.4) == "120 ms" and format_milliseconds(2500) == "2,5 sn"
    assert format_megabytes(52428800) == "50,0 MB"
    assert count_of(120, 1924, "parça") == "120/1.924 parça"
    assert format_date(datetime(2026, 12, 1, 12, tzinfo=UTC)).endswith(".12.2026")


# ----------------------------------------------------------------------------- titles


@pytest.mark.needs_data("laws")
@pytest.mark.parametrize(("path", "expected"), [
    (LAW_6331, "İş Sağlığı ve Güvenliği Kanunu (6331)"),
    (LAW_4857, "İş Kanunu (4857)"),
    (LAW_5510, "Sosyal Sigortalar ve Genel Sağlık Sigortası Kanunu (5510)"),
])
def test_law_titles_come_from_the_first_heading_with_the_law_number(path, expected) -> None:
    extracted = extract_pages(path.read_bytes())
    # 6331's metadata is a word processor's file name ("Microsoft Word - … .doc"): not used.
    assert default_title(path.name, extracted.title, extracted.pages[0].text) == expected


def _with_metadata_title(data: bytes, title: str) -> bytes:
    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(data)))
    writer.add_metadata({"/Title": title})
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def test_metadata_title_wins_when_it_looks_like_a_title() -> None:
    data = _with_metadata_title(pdfs.text_pdf(["GENEL HUKUMLER\nMadde 1 - Amac."]), "Yangın Güvenliği Prosedürü")
    extracted = extract_pages(data)
    assert extracted.title == "Yangın Güvenliği Prosedürü"
    assert default_title("yangin.pdf", extracted.title, extracted.pages[0].text) == "Yangın Güvenliği Prosedürü"
    assert default_title("x.pdf", "Microsoft Word - prosedur.docx", "İŞ KANUNU\nKanun Numarası : 4857") == \
        "İş Kanunu (4857)"
    assert default_title("6331_is-sagligi.pdf", None, "Madde 1 - Bu kanunun amacı.") == "6331 is sagligi"


def test_turkish_title_case_and_headings() -> None:
    assert turkish_title_case("SOSYAL SİGORTALAR VE GENEL SAĞLIK SİGORTASI KANUNU") == \
        "Sosyal Sigortalar ve Genel Sağlık Sigortası Kanunu"
    assert turkish_title_case("İŞ KANUNU") == "İş Kanunu"
    assert turkish_title_case("ORNEK YONETMELIK") == "Ornek Yonetmelik"  # ASCII text: its I is an i
    assert heading_title("ORNEK YONETMELIK\nBIRINCI BOLUM\nAmac") == "Ornek Yonetmelik"
    assert heading_title("BİRİNCİ BÖLÜM\nGenel Hükümler") is None  # a structure line names nothing
    assert heading_title("İş Güvenliği Prosedürü\nBu prosedür işyerinde uygulanır.") == "İş Güvenliği Prosedürü"


def test_admin_title_edit_is_validated_and_stored(db: Database, settings, embedder) -> None:
    doc_id = ingest_pdf(db, settings, embedder, pdfs.text_pdf(["Madde 1 - Amac ve kapsam."]),
                        filename="prosedur.pdf", roles=["isg"]).document_id
    for bad in ("", "   ", "\x00\x01", "x" * 501):
        with pytest.raises(TitleError):
            set_document_title(db, doc_id, bad)
    assert get_document(db, doc_id, "admin").title == "prosedur"
    renamed = set_document_title(db, doc_id, "  İş Güvenliği\nProsedürü ")
    assert renamed.title == "İş Güvenliği Prosedürü" == clean_title("İş Güvenliği Prosedürü")
    with pytest.raises(DocumentNotFound):
        set_document_title(db, doc_id + 99, "Başka")


# ----------------------------------------------------------------------------- source text


def test_reflow_joins_wrapped_lines_and_keeps_paragraphs() -> None:
    text = ("MADDE 14 – (1) İşveren, iş kazasını kazadan sonraki üç iş günü içinde Sosyal\n"
            "Güvenlik Kurumuna bildirir ve kayıtlarını tutar, gerekli incelemeleri\n"
            "yaptırır.\n"
            "(2) İşyeri hekimi meslek hastalığı tespit ettiğinde durumu yazılı olarak\n"
            "bildirir.\n"
            "a) Birinci bent.")
    out = reflow(text).splitlines()
    assert out[0].endswith("üç iş günü içinde Sosyal Güvenlik Kurumuna bildirir ve kayıtlarını tutar, "
                           "gerekli incelemeleri yaptırır.")
    assert out[1].startswith("(2) İşyeri hekimi") and out[1].endswith("yazılı olarak bildirir.")
    assert out[2] == "a) Birinci bent."
    assert reflow("tek satır") == "tek satır"


def test_common_words_are_not_highlight_terms() -> None:
    terms = question_terms("İşveren iş kazasını kaç gün içinde bildirir?")
    assert "kazas" in terms and "bildi" in terms
    assert not {"gün", "içind", "kaç"} & terms and {"gün", "içinde", "kaç"} <= COMMON_WORDS


def test_highlight_terms_drop_words_frequent_in_the_roles_documents(db: Database, settings, embedder) -> None:
    # 25 chunks (one page each) that all say "Isveren" (Turkish lower case: "ısveren"); one says "yangin".
    pages = [f"Madde {i} - Isveren calisanlari bilgilendirir, bolum {i}." for i in range(1, 25)]
    pages.append("Madde 25 - Isveren yangin tatbikati yaptirir.")
    ingest_pdf(db, settings, embedder, pdfs.text_pdf(pages), filename="uzun.pdf", roles=["isg"])
    terms = highlight_terms(db, "Isveren yangin tatbikati yaptirir mi?", "isg")
    assert "yangi" in terms and "ısver" not in terms  # "isveren" is in every chunk the role reads
    # For a role that reads none of them there is no frequency to judge by: the word list alone.
    assert "ısver" in highlight_terms(db, "Isveren yangin tatbikati yaptirir mi?", "ik")


def test_cited_page_is_read_only_by_roles_that_read_the_document(db: Database, settings, embedder) -> None:
    data = pdfs.text_pdf(["Birinci sayfa metni.", "Madde 9 - Ikinci sayfa metni.", "Ucuncu sayfa."])
    doc_id = ingest_pdf(db, settings, embedder, data, filename="uc-sayfa.pdf", roles=["isg"]).document_id
    doc = get_document(db, doc_id, "admin")
    page = read_page(settings, doc, 2, "isg")
    assert page.page_count == 3 and "Ikinci sayfa metni." in page.text
    one = PdfReader(io.BytesIO(page_pdf(settings, doc, 2, "isg")))
    assert len(one.pages) == 1 and "Ikinci sayfa" in one.pages[0].extract_text()
    assert page_filename(doc, 2) == "uc-sayfa-s2.pdf"
    with pytest.raises(DocumentNotFound):
        read_page(settings, doc, 2, "ik")
    with pytest.raises(DocumentNotFound):
        page_pdf(settings, doc, 2, "personel")
    with pytest.raises(PageNotFound, match="4. sayfa yok"):
        read_page(settings, doc, 4, "isg")


# ----------------------------------------------------------------------------- roles and labels


def test_everyone_choice_is_stored_as_every_role_and_the_help_says_what_it_means() -> None:
    assert stored_roles(["*"]) == list(ROLES)
    assert stored_roles(["isg", "personel"]) == ["isg", "personel"]
    assert roles_text(list(ROLES)) == "Herkes" and roles_text(["personel", "isg"]) == "İş sağlığı ve güvenliği, Tüm personel"
    assert "herkese açık" not in ROLE_HELP and "yalnızca personel rolüdür" in ROLE_HELP


def test_mode_labels_are_turkish() -> None:
    assert labels.mode_label("weighted").startswith("Ağırlıklı") and "weighted" not in labels.mode_label("weighted")
