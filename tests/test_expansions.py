"""The term-expansion table (ragcore.retrieval.expansions): seeded defaults, validated edits."""

from __future__ import annotations

import psycopg
import pytest

from ragcore.core import words
from ragcore.retrieval import ExpansionError, delete_expansion, list_expansions, save_expansion
from tests.conftest import LAW_4857, LAW_5510, LAW_6331


def test_migration_seeds_the_default_list(db):
    rows = list_expansions(db)
    assert len(rows) >= 80
    assert all(r.origin == "default" for r in rows)
    maas = next(r for r in rows if r.everyday == "maaş")
    assert "ücret" in maas.legal


@pytest.mark.needs_data("laws")
def test_default_legal_words_come_from_the_sample_laws(db):
    """Every legal word of the defaults occurs in one of the three laws (ragcore.documents reading)."""
    from ragcore.documents import extract_pages

    vocabulary: set[str] = set()
    for path in (LAW_6331, LAW_4857, LAW_5510):
        for page in extract_pages(path.read_bytes()).pages:
            vocabulary.update(words(page.text))
    missing = sorted({w for r in list_expansions(db) for text in r.legal for w in words(text)} - vocabulary)
    assert missing == []


def test_add_edit_delete(db):
    with db.connection() as conn:
        conn.execute("DELETE FROM public.term_expansions")
    row = save_expansion(db, "  Süt İzni ", "emzirme, süt", updated_by="admin")
    assert (row.everyday, row.legal, row.origin, row.updated_by) == ("süt izni", ("emzirme", "süt"), "admin", "admin")
    changed = save_expansion(db, "süt izni", ["emzirme"], updated_by="ik1", expansion_id=row.id)
    assert changed.legal == ("emzirme",) and changed.updated_by == "ik1"
    delete_expansion(db, row.id)
    assert list_expansions(db) == []
    with pytest.raises(ExpansionError, match="artık yok"):
        delete_expansion(db, row.id)


@pytest.mark.parametrize(("everyday", "legal", "message"), [
    ("m", ["ücret"], "en az iki harf"),
    ("maaş", [], "En az bir kanun terimi"),
    ("maaş", " , ", "En az bir kanun terimi"),
    ("maaş", ["maaş"], "aynı"),
    ("x" * 81, ["ücret"], "80 karakter"),
    ("maaş", [f"t{i}" for i in range(13)], "en fazla 12"),
    ("maaş", ["ücret", "hukuk " * 11], "en fazla 60 karakter"),  # one term of 66 characters
    ("maaş", ["ücret " * 400_000], "en fazla 60 karakter"),  # the probe's 2.5 MB "term"
])
def test_bad_rows_are_refused_with_a_turkish_message(db, everyday, legal, message):
    before = list_expansions(db)
    with pytest.raises(ExpansionError, match=message):
        save_expansion(db, everyday, legal, updated_by="admin")
    assert list_expansions(db) == before


def test_a_duplicate_everyday_word_is_refused(db):
    with db.connection() as conn:
        conn.execute("DELETE FROM public.term_expansions")
    save_expansion(db, "mesai", ["fazla", "çalışma"], updated_by="admin")
    with pytest.raises(ExpansionError, match="zaten bir eşleştirme var"):
        save_expansion(db, "Mesai", ["çalışma"], updated_by="admin")


def test_the_table_itself_refuses_a_paragraph_for_a_legal_term(db):
    """Migration 019: the same cap holds for a write that bypasses save_expansion."""
    with pytest.raises(psycopg.errors.CheckViolation), db.connection() as conn:
        conn.execute("INSERT INTO public.term_expansions (everyday, legal) VALUES ('uzun', ARRAY['ücret', %s])",
                     ("kanun " * 500,))
    with db.connection() as conn:  # 60 characters is still a term
        conn.execute("INSERT INTO public.term_expansions (everyday, legal) VALUES ('uzun', ARRAY[%s])", ("ü" * 60,))
