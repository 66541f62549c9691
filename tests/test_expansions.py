"""The term-expansion table (ragcore.retrieval.expansions): seeded defaults, validated edits."""

from __future__ import annotations

import psycopg
import pytest

from ragcore.core import PREFIX_LENGTH, words
from ragcore.retrieval import (
    Expansion,
    ExpansionError,
    delete_expansion,
    lemma_tokens,
    list_expansions,
    save_expansion,
    term_tokens,
)
from tests.conftest import LAW_4857, LAW_5510, LAW_6331


def test_migration_seeds_the_default_list(db):
    rows = list_expansions(db)
    assert len(rows) >= 80
    assert all(r.origin == "default" for r in rows)
    maas = next(r for r in rows if r.everyday == "maaş")
    assert "ücret" in maas.legal


@pytest.mark.needs_data("laws")
def test_default_legal_terms_are_lemmas_or_phrases_of_the_sample_laws(db):
    """A default's legal term is a lemma the laws use in some form (its token occurs: "taciz" in
    "tacizde") or a phrase they write word for word ("kendi adına ve hesabına bağımsız çalışan")."""
    from ragcore.documents import extract_pages

    texts = [" ".join(words(page.text)) for path in (LAW_6331, LAW_4857, LAW_5510)
             for page in extract_pages(path.read_bytes()).pages]
    tokens = {word[:PREFIX_LENGTH] for text in texts for word in text.split()}
    flat = " | ".join(texts)
    missing = []
    for row in list_expansions(db):
        for term in row.legal:
            found = words(term)
            if len(found) == 1 and found[0][:PREFIX_LENGTH] not in tokens:
                missing.append((row.everyday, term))
            elif len(found) > 1 and f" {' '.join(found)} " not in f" {flat} ":
                missing.append((row.everyday, term))
    assert missing == []


def test_default_legal_terms_are_not_inflected_forms_of_one_another(db):
    """No row lists a word beside its own forms ("ücret, ücreti, ücretin", "süreleri, sürelere",
    "fesih, feshi", "gebe, gebelik"): a term is a lemma, and its forms' tokens come from
    `term_tokens`. Two bare words of a row share no token and neither starts with the other."""
    from ragcore.retrieval.expansions import inflected_pair

    assert [(r.everyday, pair) for r in list_expansions(db) if (pair := inflected_pair(r.legal))] == []
    assert inflected_pair(["süreleri", "sürelere"]) and inflected_pair(["fesih", "feshi"])  # what 010 had


def test_prim_is_no_bonus_and_loose_words_became_terms(db):
    """The review's examples (issue 41): an SGK premium is not a bonus, and "ihbar" and "bağkur"
    map to the laws' terms, not to inflected words cut from them."""
    rows = {r.everyday: r.legal for r in list_expansions(db)}
    assert "prim" not in rows and all("ikramiye" not in legal for e, legal in rows.items() if "prim" in e)
    assert rows["ihbar"] == ("bildirim süresi", "süreli fesih", "bildirim süresine ait ücret")
    assert rows["bağkur"] == ("kendi adına ve hesabına bağımsız çalışan",)


def test_a_lemma_brings_the_tokens_of_its_changed_stem():
    """The index cuts words to PREFIX_LENGTH letters: "izni" is not "izin"'s token, so the lemma
    adds it; a longer word keeps its token through its forms and adds nothing."""
    assert lemma_tokens("izin")[:3] == ["izin", "izni", "izne"]
    assert {"feshi", "feshe"} <= set(lemma_tokens("fesih")) and "hakkı" in lemma_tokens("hak")
    assert lemma_tokens("tazminat") == ["tazmi"] and lemma_tokens("süre") == ["süre"]
    assert term_tokens("kendi adına ve hesabına") == ["kendi", "adına", "hesab"]  # a phrase: as written, no "ve"
    row = Expansion(1, "yıllık izin", ("yıllık ücretli izin", "izin"))
    assert row.legal_tokens == ("yıllı", "ücre" + "t", "izin", "izni", "izne", "iznin")


SEEDED_010 = {"maaş": ["ücret", "ücreti", "ücretin"], "bordro": ["ücret", "hesap", "pusulası"],
              "prim": ["ikramiye"], "kazada": ["kazası", "kazaları", "bildirim"]}


def test_migration_018_changes_only_the_defaults_no_admin_edited(db):
    """The reviewed defaults replace a seeded row only while it is as 010 seeded it: a row an
    admin edited (an editor is recorded) or wrote keeps the admin's terms, also a row 018 deletes."""
    from ragcore.store.migrations import migration_files

    (body,) = [sql for version, _, sql in migration_files() if version == 18]
    with db.connection() as conn:  # the state 010 left, with two rows edited by an admin
        conn.execute("DELETE FROM public.term_expansions WHERE everyday = ANY(%s)", (list(SEEDED_010),))
        for everyday, legal in SEEDED_010.items():
            conn.execute("INSERT INTO public.term_expansions (everyday, legal, origin) VALUES (%s, %s, 'default')",
                         (everyday, legal))
        conn.execute("UPDATE public.term_expansions SET legal = %s, updated_by = 'ik1' WHERE everyday = 'bordro'",
                     (["ücret", "bordro"],))
        conn.execute("UPDATE public.term_expansions SET updated_by = 'ik1' WHERE everyday = 'kazada'")
        conn.execute("INSERT INTO public.term_expansions (everyday, legal, origin, updated_by) "
                     "VALUES ('prim günüm', %s, 'admin', 'ik1')", (["ödeme", "sayısı", "gün"],))
        conn.execute(body)
    rows = {r.everyday: (r.legal, r.updated_by) for r in list_expansions(db)}
    assert rows["maaş"] == (("ücret",), None)  # as seeded: reviewed
    assert "prim" not in rows  # as seeded, wrong sense: deleted
    assert rows["bordro"] == (("ücret", "bordro"), "ik1")  # edited: the admin's
    assert rows["kazada"] == (("kazası", "kazaları", "bildirim"), "ik1")  # edited, same terms: kept
    assert rows["prim günüm"] == (("ödeme", "sayısı", "gün"), "ik1")  # the admin's own row


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
    ("maaş", ["ücret", "ücretin"], "aynı kelimenin hâlleri"),
    ("izin", ["izin günü", "izni", "iznin"], "aynı kelimenin hâlleri"),
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
