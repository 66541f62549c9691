"""PDF extraction: the real laws, text normalisation, and every bad input as a clear error."""

from __future__ import annotations

import pytest

from ragcore.documents import pdf
from tests import pdfs
from tests.conftest import LAW_6331, require_data


@pytest.fixture(scope="module")
def law_6331() -> pdf.PdfText:
    require_data("laws")
    return pdf.extract_pages(LAW_6331.read_bytes())


def test_law_6331_has_24_pages_with_articles_and_turkish_letters(law_6331):
    assert law_6331.page_count == 24 and law_6331.skipped_pages == []
    assert [p.number for p in law_6331.pages] == list(range(1, 25))
    first = law_6331.pages[0].text
    assert first.startswith("İŞ SAĞLIĞI VE GÜVENLİĞİ KANUNU")  # the running page number "11647" is dropped
    assert "MADDE 1 – (1) Bu Kanunun amacı; işyerlerinde iş sağlığı" in first
    assert "  " not in first and " \n" not in first


def test_correct_s_spacing_in_the_laws_is_left_alone(law_6331):
    text = "\n".join(p.text for p in law_6331.pages)
    assert "hiçbir şekilde" in text and "ve şartlar" in text


@pytest.mark.parametrize(
    ("raw", "clean"),
    [
        ("sağ-\nlık hizmeti", "sağlık hizmeti"),  # line-end hyphenation
        ("6/5/2016-\n6715/3 md.", "6/5/2016-6715/3 md."),  # a dash in a reference keeps its dash
        ("ba ğ lı kuruluş", "bağlı kuruluş"),  # a lone "ğ" glyph
        ("sa ğlık", "sağlık"),  # no Turkish word starts with ğ
        ("do g\u02d8ru", "doğru"),  # spacing breve
        ("tebliğ ile", "tebliğ ile"),
        ("i şveren", "işveren"),  # a one-letter fragment is not a word
        ("bu şekilde", "bu şekilde"),
        ("o şekilde", "o şekilde"),  # "o" is a word
        ("  çok   boşluk\t var  \n\n\n 12 ", "çok boşluk var"),  # spaces, blank lines, page number line
        ("ﬁrma", "firma"),  # NFKC ligature
    ],
)
def test_normalize_page_text(raw, clean):
    assert pdf.normalize_page_text(raw) == clean


@pytest.mark.parametrize(
    ("make", "error", "words"),
    [
        (lambda: b"", pdf.EmptyFile, "boş"),
        (pdfs.not_a_pdf, pdf.NotAPdf, "PDF değil"),
        (pdfs.encrypted_pdf, pdf.EncryptedPdf, "şifrelenmiş"),
        (pdfs.truncated_pdf, pdf.CorruptPdf, "eksik"),
        (pdfs.corrupt_pdf, pdf.CorruptPdf, "bozuk"),
        (pdfs.image_only_pdf, pdf.NoTextLayer, "OCR ile de okunabilir metin bulunamadı"),
    ],
)
def test_bad_input_raises_a_clear_turkish_error(make, error, words):
    with pytest.raises(error, match=words):
        pdf.extract_pages(make())


def test_pages_without_text_are_skipped_and_reported():
    seen = []
    result = pdf.extract_pages(pdfs.text_pdf(["Bir.", "", "Uc."]), progress=lambda d, t: seen.append((d, t)))
    assert result.page_count == 3 and result.skipped_pages == [2]
    assert [(p.number, p.text) for p in result.pages] == [(1, "Bir."), (3, "Uc.")]
    assert seen == [(0, 3), (1, 3), (2, 3), (3, 3)]  # 0 first: the count is shown before page 1
