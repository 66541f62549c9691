"""How a finished answer reads (issue 22): the lead line naming its source, quotes in order of
relevance, and citations numbered by first use with the sources reordered to match."""

from __future__ import annotations

import pytest

from ragcore.answer import Passage, finalize, lead_line, renumber, renumbered_pieces, without_lead
from ragcore.answer.extractive import quote
from ragcore.answer.lead import dative
from ragcore.core import Source


def _source(rank: int, title: str, article: str | None, page: int = 1, page_end: int | None = None) -> Source:
    return Source(rank, 100 + rank, 1, title, f"{rank}.pdf", page, page_end or page, article, 1.0 / rank,
                  f"metin {rank}")


IS_KANUNU = "İş Kanunu (4857)"
SOURCES = [
    _source(1, IS_KANUNU, "Madde 54"),
    _source(2, "İzin Prosedürü", None, 12),
    _source(3, IS_KANUNU, "Madde 53", 9),
    _source(4, "İş Sağlığı ve Güvenliği Kanunu (6331)", "Madde 10", 7),
]


# ----------------------------------------------------------------------------- the lead line


@pytest.mark.parametrize(("label", "expected"), [
    ("Madde 53", "Madde 53'e"), ("Madde 10", "Madde 10'a"), ("Madde 6", "Madde 6'ya"), ("Madde 2", "Madde 2'ye"),
    ("Madde 9", "Madde 9'a"), ("Madde 40", "Madde 40'a"), ("Madde 50", "Madde 50'ye"), ("Madde 100", "Madde 100'e"),
    ("Geçici Madde 1", "Geçici Madde 1'e"), ("Madde 25/A", "Madde 25/A'ya"), ("Madde 5/B", "Madde 5/B'ye"),
    ("s. 12", "s. 12'ye"), ("s. 12–13", "s. 12–13'e"), ("s. 30", "s. 30'a"),
])
def test_dative_follows_the_number_as_it_is_read(label: str, expected: str) -> None:
    assert dative(label) == expected


def test_lead_names_title_with_law_number_and_article() -> None:
    assert lead_line([SOURCES[2]]) == "İş Kanunu (4857), Madde 53'e göre:"


def test_lead_names_both_articles_of_one_document_in_quoting_order() -> None:
    assert lead_line([SOURCES[2], SOURCES[0]]) == "İş Kanunu (4857), Madde 53 ve Madde 54'e göre:"
    assert lead_line([SOURCES[2], SOURCES[2]]) == "İş Kanunu (4857), Madde 53'e göre:"  # one place, named once


def test_lead_names_each_document_when_quotes_come_from_two() -> None:
    assert lead_line([SOURCES[3], SOURCES[2]]) == \
        "İş Sağlığı ve Güvenliği Kanunu (6331), Madde 10 ve İş Kanunu (4857), Madde 53'e göre:"


def test_lead_without_an_article_names_title_and_page() -> None:
    assert lead_line([SOURCES[1]]) == "İzin Prosedürü, s. 12'ye göre:"
    assert lead_line([_source(5, "İzin Prosedürü", None, 12, 13)]) == "İzin Prosedürü, s. 12–13'e göre:"


def test_quote_leads_then_quotes_in_order_of_relevance() -> None:
    """The more probable passage comes first whatever its position in the context."""
    passages = [Passage(3, "Yıllık izin on dört günden az olamaz.", 0.9), Passage(1, "İzin bölünebilir.", 0.5)]
    assert quote(passages, SOURCES) == ("İş Kanunu (4857), Madde 53 ve Madde 54'e göre:\n\n"
                                        "> “Yıllık izin on dört günden az olamaz.” [3]\n> “İzin bölünebilir.” [1]")
    assert without_lead(quote(passages, SOURCES)).startswith("> “Yıllık izin")
    assert without_lead("> “Yalnız alıntı.” [1]") == "> “Yalnız alıntı.” [1]"


# ----------------------------------------------------------------------------- numbering by first use


def test_renumber_makes_the_first_citation_one_and_reorders_the_sources() -> None:
    text, cited, sources = renumber("A [3]. B [1][3]. C [4].", (3, 1, 4), SOURCES)
    assert text == "A [1]. B [2][1]. C [3]."
    assert cited == (1, 2, 3)
    # Cited ones first in order of first citation, then the uncited one, each ranked by its new number.
    assert [s.chunk_id for s in sources] == [103, 101, 104, 102]
    assert [s.rank for s in sources] == [1, 2, 3, 4]
    assert [s.text for s in sources] == ["metin 3", "metin 1", "metin 4", "metin 2"]


def test_renumber_leaves_an_answer_already_in_order_unchanged() -> None:
    text, cited, sources = renumber("A [1]. B [2].", (1, 2), SOURCES)
    assert (text, cited) == ("A [1]. B [2].", (1, 2)) and list(sources) == SOURCES


def test_llm_answer_post_processing_renumbers_what_finalize_kept() -> None:
    """The language model's path: finalize drops the marker outside the context, renumber does the rest."""
    result = finalize("İzin on dört gündür [3][9]. Bölünebilir [1].", SOURCES)
    text, cited, sources = renumber(result.text, result.cited, SOURCES)
    assert text == "İzin on dört gündür [1]. Bölünebilir [2]." and cited == (1, 2)
    assert sources[0].article == "Madde 53" and sources[1].article == "Madde 54"


def test_streamed_pieces_get_the_final_numbers_even_when_a_marker_is_cut() -> None:
    raw = ["İzin on dört gündür [", "3]. Bölünebilir [1", "][3]. Eski [9]."]
    streamed = "".join(renumbered_pieces(raw, len(SOURCES)))
    result = finalize("".join(raw), SOURCES)
    final, _, _ = renumber(result.text, result.cited, SOURCES)
    assert streamed == "İzin on dört gündür [1]. Bölünebilir [2][1]. Eski [9]."  # [9] streams as written
    assert final == "İzin on dört gündür [1]. Bölünebilir [2][1]. Eski."  # …and is dropped from the final text
    assert list(renumbered_pieces(["Kaynaksız cevap."], 4)) == ["Kaynaksız cevap."]
