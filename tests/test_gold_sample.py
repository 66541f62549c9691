"""The sample gold set (eval/gold/paraphrase_laws.jsonl) against the law text the app cites.

Every answerable question names documents, the article label the app gives the answer's chunk
and the PDF pages the app would cite; its key facts are phrases a correct answer quotes. The
law-text test reads the three laws the way ingest does (`ragcore.documents.pdf.extract_pages`,
`ragcore.documents.chunking.chunk_pages` at the default 1000/150) and checks that every key fact is on the
cited pages, inside a chunk labelled with the cited article, so the sample cannot drift silently
from the law text when extraction or chunking changes. It fails, never skips, when the PDFs are
missing (`python scripts/download_data.py` fetches them).
"""

from __future__ import annotations

import functools
import json
import re

import pytest

from ragcore.core import ROLES, Chunk, turkish_lower
from ragcore.documents import chunk_pages, extract_pages
from tests.conftest import DOCUMENTS_DIR, REPO

GOLD = REPO / "eval" / "gold" / "paraphrase_laws.jsonl"
CORPUS = REPO / "eval" / "gold" / "paraphrase_laws.corpus.json"
CHUNK_SIZE, CHUNK_OVERLAP = 1000, 150  # the app's defaults (ragcore.core.config)
FIELDS = ["id", "question", "answerable", "expected", "roles", "key_facts", "notes"]
LAWS = {
    "6331": "6331-is-sagligi-ve-guvenligi-kanunu.pdf",
    "4857": "4857-is-kanunu.pdf",
    "5510": "5510-sosyal-sigortalar-ve-genel-saglik-sigortasi-kanunu.pdf",
}


def _rows() -> list[dict]:
    return [json.loads(line) for line in GOLD.read_text(encoding="utf-8").splitlines() if line.strip()]


ROWS = _rows()
ANSWERABLE = [row for row in ROWS if row["answerable"]]
CORPUS_ROLES = {name: doc["roles"] for name, doc in json.loads(CORPUS.read_text(encoding="utf-8"))["documents"].items()}


def _norm(text: str) -> str:
    """Turkish-lowercased, whitespace collapsed: PDF line breaks fall anywhere inside a phrase."""
    return " ".join(turkish_lower(text).split())


def occurs(phrase: str, text: str) -> bool:
    """The phrase in the text, starting at a word boundary ("on gün" is not inside "son gün")."""
    return re.search(r"(?<!\w)" + re.escape(_norm(phrase)), _norm(text)) is not None


@functools.cache
def law(name: str) -> tuple[dict[int, str], list[Chunk]]:
    """Page texts by 1-based page number, and the app's chunks of one law (read once per session)."""
    path = DOCUMENTS_DIR / name
    assert path.is_file(), f"{path} is missing: run `python scripts/download_data.py` (DOCUMENTS_DIR={DOCUMENTS_DIR})"
    text = extract_pages(path.read_bytes())
    return {page.number: page.text for page in text.pages}, chunk_pages(text.pages, CHUNK_SIZE, CHUNK_OVERLAP)


# --------------------------------------------------------------------------- format (fast)


def test_every_line_has_the_contract_fields_and_a_unique_id():
    assert [list(row) for row in ROWS] == [FIELDS] * len(ROWS)
    ids = [row["id"] for row in ROWS]
    assert len(set(ids)) == len(ids)
    assert all(re.fullmatch(r"p\d{2,}", i) for i in ids)
    assert all(isinstance(row["answerable"], bool) and row["question"].strip() and row["notes"].strip() for row in ROWS)


def test_answerable_rows_name_pages_and_key_facts_and_unanswerable_rows_name_nothing():
    for row in ROWS:
        if row["answerable"]:
            assert row["expected"] and 1 <= len(row["key_facts"]) <= 3, row["id"]
            for entry in row["expected"]:
                assert list(entry) == ["document", "article", "pages"], row["id"]
                assert entry["document"] in CORPUS_ROLES, row["id"]
                assert re.fullmatch(r"(?:Madde|Ek Madde|Geçici Madde) \d+(?:/[A-ZÇĞİÖŞÜ])?", entry["article"]), row["id"]
                assert entry["pages"] == sorted(set(entry["pages"])) and all(p >= 1 for p in entry["pages"]), row["id"]
        else:
            assert row["expected"] == [] and row["key_facts"] == [], row["id"]


def test_every_asking_role_can_read_an_expected_document():
    assert set(CORPUS_ROLES) == set(LAWS.values())
    assert all(roles and set(roles) <= set(ROLES) for roles in CORPUS_ROLES.values())
    for row in ROWS:
        assert row["roles"] and set(row["roles"]) <= set(ROLES), row["id"]
        for role in row["roles"] if row["answerable"] else ():
            readable = [e["document"] for e in row["expected"] if role in CORPUS_ROLES[e["document"]]]
            assert readable, f"{row['id']}: role {role} cannot read any expected document"


def test_the_set_is_large_and_spread_over_many_articles_of_each_law():
    assert len(ANSWERABLE) >= 48 and len(ROWS) - len(ANSWERABLE) >= 12
    for code, name in LAWS.items():
        entries = [e for row in ANSWERABLE for e in row["expected"] if e["document"] == name]
        articles = {e["article"] for e in entries}
        assert len(entries) >= 14 and len(articles) >= 12, (code, len(entries), sorted(articles))


def test_occurs_matches_across_line_breaks_and_case_but_only_from_a_word_start():
    assert occurs("Üç İş Günü", "kazadan sonraki üç iş\ngünü içinde")
    assert occurs("İşverence karşılanır", "maliyet işverence karşılanır,")
    assert not occurs("on gün", "en son gün içinde")


# --------------------------------------------------------------------------- law text (slow)


@pytest.mark.slow
@pytest.mark.parametrize("row", ANSWERABLE, ids=[row["id"] for row in ANSWERABLE])
def test_key_facts_are_on_the_cited_pages_inside_the_cited_article(row: dict):
    for entry in row["expected"]:
        pages, chunks = law(entry["document"])
        where = f"{row['id']} {entry['document']} {entry['article']} pages {entry['pages']}"
        labelled = [c for c in chunks if c.article == entry["article"]]
        assert labelled, f"{where}: no chunk carries this article label"
        span = {p for c in labelled for p in range(c.page_start, c.page_end + 1)}
        assert set(entry["pages"]) <= span, f"{where}: the article spans pages {sorted(span)}"
        cited = [c for c in labelled if c.page_start <= entry["pages"][-1] and c.page_end >= entry["pages"][0]]
        cited_text = "\n".join(pages[p] for p in entry["pages"])
        for fact in row["key_facts"]:
            assert occurs(fact, cited_text), f"{where}: {fact!r} is not on the cited pages"
            assert any(occurs(fact, c.text) for c in cited), f"{where}: {fact!r} is in no chunk of the article there"
