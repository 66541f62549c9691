"""Chunking: exact spans, sentence packing with overlap, articles kept whole, exact pages."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from ragcore.core import Chunk, Page
from ragcore.documents import ARTICLE_RE, chunk_pages, chunk_text, extract_pages, joined_text
from tests.conftest import LAW_4857, LAW_6331, TQUAD_DIR

PROSE = " ".join(
    f"Bu {i}. cümle Türkçe bir metnin parçasıdır ve uzunluğu birkaç kelimeyi geçer." for i in range(1, 60)
)


def assert_exact_spans(text: str, chunks: list[Chunk]) -> None:
    for i, chunk in enumerate(chunks):
        assert chunk.ordinal == i
        assert text[chunk.char_start : chunk.char_end] == chunk.text
        assert chunk.text == chunk.text.strip() and chunk.text


def assert_covers(text: str, chunks: list[Chunk]) -> None:
    """Every non-space character of the text is in some chunk."""
    covered = bytearray(len(text))
    for c in chunks:
        covered[c.char_start : c.char_end] = b"\1" * (c.char_end - c.char_start)
    assert all(covered[i] or text[i].isspace() for i in range(len(text)))


def test_prose_is_packed_by_sentences_with_overlap_and_exact_spans():
    chunks = chunk_text(PROSE, 400, 100)
    assert_exact_spans(PROSE, chunks)
    assert_covers(PROSE, chunks)
    assert all(len(c.text) <= 400 for c in chunks)
    assert all(c.text.endswith(".") for c in chunks)  # cut at sentence ends only
    for a, b in zip(chunks, chunks[1:], strict=False):
        assert 0 < a.char_end - b.char_start <= 100  # overlap of whole sentences, never more


def test_zero_overlap_gives_disjoint_chunks():
    chunks = chunk_text(PROSE, 400, 0)
    assert all(b.char_start >= a.char_end for a, b in zip(chunks, chunks[1:], strict=False))
    assert_covers(PROSE, chunks)


def test_only_an_over_long_sentence_is_hard_cut():
    long_sentence = "Kelime " + "kelime " * 300 + "son."
    text = f"Kısa giriş cümlesi. {long_sentence} Kısa kapanış cümlesi."
    chunks = chunk_text(text, 200, 40)
    assert_exact_spans(text, chunks)
    assert_covers(text, chunks)
    assert all(len(c.text) <= 200 for c in chunks)
    assert chunks[0].text == "Kısa giriş cümlesi."
    assert chunks[-1].text == "Kısa kapanış cümlesi."
    assert all(not c.text.startswith("elime") for c in chunks)  # cuts fall on spaces


@pytest.mark.needs_data("tquad")
def test_tquad_articles_keep_exact_spans():
    path = TQUAD_DIR / "dev-v0.1.json"
    articles = json.loads(path.read_text(encoding="utf-8"))["data"][:20]
    for article in articles:
        text = "\n".join(p["context"] for p in article["paragraphs"])
        chunks = chunk_text(text, 1000, 150)
        assert_exact_spans(text, chunks)
        assert_covers(text, chunks)
        assert all(len(c.text) <= 1000 for c in chunks)


PAGES = [
    Page(1, "ÖRNEK YÖNETMELİK\nKabul Tarihi : 1/1/2024\nBİRİNCİ BÖLÜM\nAmaç ve Kapsam\nAmaç\n"
            "MADDE 1 – (1) Bu Yönetmeliğin amacı güvenliği sağlamaktır.\n"
            "Kapsam\nMADDE 2 – (1) Bu Yönetmelik bütün işyerlerine uygulanır.\n(2) Kamu kurumları da"),
    Page(2, "kapsamdadır.\nTanımlar\nMadde 3 - Bu Yönetmelikte geçen çalışan kişidir.\n"
            + "\n".join(f"({i}) " + "Uzun bir fıkra metni burada devam eder. " * 6 for i in range(1, 6))),
    Page(4, "GEÇİCİ MADDE 1 – (1) Mevcut işyerleri bir yıl içinde uyum sağlar.\n"
            "EK MADDE 2 – (1) Ek hüküm.\n"
            "ÖRNEK YÖNETMELİĞE EK VE DEĞİŞİKLİK GETİREN\nMEVZUATI GÖSTERİR LİSTE\n6552 2, 6 11/9/2014"),
]


@pytest.fixture(scope="module")
def law_chunks() -> list[Chunk]:
    return chunk_pages(PAGES, 300, 50)


def test_articles_carry_labels_and_their_headings(law_chunks):
    text, _ = joined_text(PAGES)
    assert_exact_spans(text, law_chunks)
    assert law_chunks[0].article is None and law_chunks[0].text.startswith("ÖRNEK YÖNETMELİK")
    first = law_chunks[1]
    assert first.article == "Madde 1" and first.text.startswith("BİRİNCİ BÖLÜM\nAmaç ve Kapsam\nAmaç\nMADDE 1")
    labels = [c.article for c in law_chunks]
    assert labels[:3] == [None, "Madde 1", "Madde 2"]
    assert {"Madde 3", "Geçici Madde 1", "Ek Madde 2"} <= set(labels)
    assert labels[-1] is None and law_chunks[-1].text.startswith("ÖRNEK YÖNETMELİĞE EK VE DEĞİŞİKLİK")


def test_an_article_crossing_a_page_records_the_range(law_chunks):
    second = next(c for c in law_chunks if c.article == "Madde 2")
    assert (second.page_start, second.page_end) == (1, 2)
    assert second.text.startswith("Kapsam\nMADDE 2") and second.text.endswith("kapsamdadır.")
    provisional = next(c for c in law_chunks if c.article == "Geçici Madde 1")
    assert (provisional.page_start, provisional.page_end) == (4, 4)  # page numbers as given, not indexes


def test_a_long_article_is_split_at_numbered_paragraphs(law_chunks):
    parts = [c for c in law_chunks if c.article == "Madde 3"]
    assert len(parts) >= 3
    assert parts[0].text.startswith("Tanımlar\nMadde 3 -")
    assert all(p.text.startswith("(") for p in parts[1:])
    assert all(len(p.text) <= 300 for p in parts)


def test_no_chunk_holds_two_article_starts(law_chunks):
    assert all(len(ARTICLE_RE.findall(c.text)) <= 1 for c in law_chunks)


def test_text_outside_articles_never_crosses_a_page():
    pages = [Page(1, "Giriş metni. " * 30), Page(2, "İkinci sayfa metni. " * 30)]
    chunks = chunk_pages(pages, 250, 40)
    assert all(c.page_start == c.page_end and c.article is None for c in chunks)
    assert {c.page_start for c in chunks} == {1, 2}


def pages_right(chunk: Chunk, text: str, starts: list[int], numbers: list[int]) -> bool:
    """Independent check: the text lies inside pages page_start..page_end and touches both."""
    first, last = numbers.index(chunk.page_start), numbers.index(chunk.page_end)
    hi = starts[last + 1] if last + 1 < len(starts) else len(text)
    first_end = starts[first + 1] if first + 1 < len(starts) else len(text)
    return starts[first] <= chunk.char_start < first_end and starts[last] < chunk.char_end <= hi


@pytest.mark.needs_data("laws")
@pytest.mark.parametrize("law", [LAW_6331, LAW_4857], ids=["6331", "4857"])
def test_real_laws_meet_the_chunking_targets(law):
    pages = extract_pages(law.read_bytes()).pages
    chunks = chunk_pages(pages, 1000, 150)
    text, starts = joined_text(pages)
    numbers = [p.number for p in pages]
    assert_exact_spans(text, chunks)
    assert_covers(text, chunks)
    assert sum(len(ARTICLE_RE.findall(c.text)) > 1 for c in chunks) == 0
    assert sum(not pages_right(c, text, starts, numbers) for c in chunks) == 0
    assert all(len(c.text) <= 1000 * 1.2 for c in chunks)
    assert all(c.page_start == c.page_end for c in chunks if c.article is None)
    if law == LAW_6331:
        per_article = Counter(c.article for c in chunks if c.article)
        assert len(per_article) == 49
        assert {"Madde 1", "Madde 25/A", "Madde 39", "Geçici Madde 9"} <= set(per_article)
        assert sum(n > 1 for n in per_article.values()) <= 20  # the seed split 34 of 39
