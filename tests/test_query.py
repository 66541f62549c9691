"""The lexical query a question becomes (ragcore.retrieval.query): ASCII-typed words find the
Turkish terms, for the dense leg too, everyday words add the laws' words, and neither depends on
the asking role's forbidden documents."""

from __future__ import annotations

import pytest

from ragcore.core import fold_ascii
from ragcore.retrieval import lexical_query, query_terms, read_snapshot, retrieve, save_expansion
from ragcore.retrieval.query import dense_question, evidence_terms
from tests.retrieval_support import DocSpec, insert_document, make_test_embedder

LABOUR = DocSpec("is-kanunu", ("ik", "personel"), (
    ("İşçinin iş sözleşmesinin feshi halinde kıdem tazminatı ödenir; işveren bildirim sürelerine uyar.", 3, "Madde 17"),
    ("Yıllık ücretli izin süresi hizmet süresi beş yıla kadar olanlara on dört günden az olamaz.", 12, "Madde 53"),
    ("Ücret en geç ayda bir ödenir; ödeme günü sözleşmeyle bir haftaya kadar kısaltılabilir.", 8, "Madde 32"),
))
SAFETY = DocSpec("isg-kanunu", ("isg",), (
    ("İşveren çalışanlara kişisel koruyucu donanım sağlar ve kullanılmasını denetler.", 4, "Madde 4"),
    ("Ücretsiz eğitim verilir; çalışanın çıkarılması halinde yeni gelen çalışana eğitim tekrarlanır.", 6, "Madde 17"),
))


@pytest.fixture()
def corpus(db):
    """The labour document, and an empty expansion table (tests that want rows add them)."""
    with db.connection() as conn:
        conn.execute("DELETE FROM public.term_expansions")
    embedder = make_test_embedder()
    insert_document(db, embedder, LABOUR)
    return db, embedder


def _query(db, question: str, role: str):
    with read_snapshot(db) as conn:
        return lexical_query(conn, question, role)


def test_fold_ascii_matches_the_database_function(db):
    words = ["işçinin", "çıkarıldım", "güvenliği", "öğrenci", "ÜCRET".lower(), "sözleşmesinin"]
    with db.connection() as conn:
        folded = [conn.execute("SELECT fold_ascii(%s)", (w,)).fetchone()[0] for w in words]
    assert folded == [fold_ascii(w) for w in words]
    assert fold_ascii("işçinin çıkarıldım") == "iscinin cikarildim"


def test_ascii_typed_question_is_respelled_to_the_lexicon_terms(corpus):
    db, _ = corpus
    query = _query(db, "iscinin sozlesmesinin feshi halinde kidem tazminati", "ik")
    assert query.respelled == {"iscin": "işçin", "sozle": "sözle", "kidem": "kıdem"}
    assert query.terms[:3] == ["işçin", "sözle", "feshi"]
    assert set(query.evidence_terms) >= {"işçin", "sözle", "kıdem"}


def test_a_word_typed_with_turkish_letters_is_not_respelled(corpus):
    """Its writer had the letters: "işcinin" keeps its own token, as "vardiyasında" must not become
    "vardı" (a prefix the lexicon lacks is a word the documents lack, not a typo)."""
    db, _ = corpus
    query = _query(db, "işcinin kidem tazminati", "ik")
    assert query.respelled == {"kidem": "kıdem"}
    assert query.terms[0] == "işcin"


def test_stop_and_question_words_typed_without_turkish_letters_are_no_content():
    """"icin", "kac", "nasil" are "için", "kaç", "nasıl": kept, they were respelled and counted as
    evidence the question shares with the documents."""
    assert query_terms("isten cikarildim icin cok uzgunum") == ["isten", "cikar", "uzgun"]
    assert evidence_terms("yillik izin kac gun nasil hesaplanir") == ["yilli", "izin", "gun", "hesap"]
    assert evidence_terms("su icmek yasak mi") == ["su", "icmek", "yasak"]  # "su" is water, not "şu"
    assert evidence_terms("YÖK üyeliği") == ["yök", "üyeli"]  # typed with its letters: no "yok"


def test_correctly_spelled_question_is_unchanged(corpus):
    db, _ = corpus
    question = "İşçinin sözleşmesinin feshi halinde kıdem tazminatı"
    query = _query(db, question, "ik")
    assert query.respelled == {}
    assert query.terms == query_terms(question)
    assert query.evidence_terms == evidence_terms(question)


@pytest.mark.parametrize(("typed", "spelled"), [
    ("isten cikarildim kidem tazminati alir miyim", "işten çıkarıldım kıdem tazminatı alır mıyım"),
    ("yillik ucretli izin suresi kac gun", "yıllık ücretli izin süresi kaç gün"),
    ("ucret ayda bir mi odenir", "ücret ayda bir mi ödenir"),
])
def test_ascii_folded_questions_find_the_same_article(corpus, typed, spelled):
    db, embedder = corpus
    plain = retrieve(db, embedder, spelled, "ik", k=3, mode="lexical")
    folded = retrieve(db, embedder, typed, "ik", k=3, mode="lexical")
    assert folded.sources[0].article == plain.sources[0].article
    assert [s.chunk_id for s in folded.sources] == [s.chunk_id for s in plain.sources]


class RecordingEmbedder:
    """The test embedder, remembering the questions it was given."""

    def __init__(self, inner) -> None:
        self.inner, self.questions = inner, []
        self.kind, self.model, self.name, self.dim = inner.kind, inner.model, inner.name, inner.dim

    def embed_queries(self, texts):
        self.questions.extend(texts)
        return self.inner.embed_queries(texts)

    def embed_passages(self, texts):
        return self.inner.embed_passages(texts)


def test_the_dense_leg_embeds_the_question_with_the_lexicon_spelling(corpus):
    db, embedder = corpus
    typed = "Iscinin sozlesmesinin feshi halinde kidem tazminati, ne olur?"
    assert dense_question(typed, _query(db, typed, "ik")) == "işçinin sözlesmesinin feshi halinde kıdem tazminati, ne olur?"
    recording = RecordingEmbedder(embedder)
    folded = retrieve(db, recording, typed, "ik", k=3, mode="dense")
    spelled = "İşçinin sözleşmesinin feshi halinde kıdem tazminatı, ne olur?"
    retrieve(db, recording, spelled, "ik", k=3, mode="dense")
    assert recording.questions == [dense_question(typed, _query(db, typed, "ik")), spelled]  # as typed when nothing was respelled
    assert folded.question == typed  # the retrieval still records what the user asked


def test_the_dense_question_follows_only_the_role_lexicon(corpus):
    db, embedder = corpus
    question = "calisanin cikarilmasi"
    before = dense_question(question, _query(db, question, "ik"))
    insert_document(db, embedder, SAFETY)
    assert dense_question(question, _query(db, question, "ik")) == before
    assert dense_question(question, _query(db, question, "isg")).startswith("çalışanin çıkarilmasi")


def test_respelling_reads_only_the_role_lexicon(corpus):
    """'cikar' folds to 'çıkar' only in the isg document: ik's query may not borrow it."""
    db, embedder = corpus
    before = _query(db, "calisanin cikarilmasi", "ik")
    insert_document(db, embedder, SAFETY)
    after = _query(db, "calisanin cikarilmasi", "ik")
    assert after == before
    assert "çıkar" not in after.terms
    assert _query(db, "calisanin cikarilmasi", "isg").respelled.get("cikar") == "çıkar"


def test_expansion_adds_the_legal_words_and_edits_take_effect(corpus):
    db, embedder = corpus
    question = "maaşımı ne zaman yatırmak zorundalar"
    before = retrieve(db, embedder, question, "ik", k=3, mode="lexical")
    assert before.extra["expansions"] == []
    row = save_expansion(db, "maaş", ["ücret", "ödenir"], updated_by="admin")
    after = retrieve(db, embedder, question, "ik", k=3, mode="lexical")
    assert after.extra["expansions"] == [{"everyday": "maaş", "legal": ["ücret", "ödenir"]}]
    assert after.sources[0].article == "Madde 32"
    # the evidence the refusal gate reads is the question's own words only
    assert after.evidence.coverage == before.evidence.coverage
    save_expansion(db, "maaş", ["izin"], updated_by="admin", expansion_id=row.id)
    assert retrieve(db, embedder, question, "ik", k=3, mode="lexical").extra["expansions"] == [
        {"everyday": "maaş", "legal": ["izin"]}]


def test_expansion_matches_ascii_typed_everyday_words(corpus):
    db, _ = corpus
    save_expansion(db, "maaş", ["ücret"], updated_by="admin")
    assert [e.everyday for e in _query(db, "maasim yatmadi", "ik").expansions] == ["maaş"]


def test_default_expansions_apply_to_everyday_words(db):
    """The seeded list (migration 010) turns "kovuldum" into the law's termination words."""
    query = _query(db, "kovuldum, tazminat alır mıyım", "personel")
    everyday = {e.everyday for e in query.expansions}
    assert any(w.startswith("kov") for w in everyday)
    assert {"fesih", "feshi"} & set(query.terms)


def test_expansions_are_the_same_for_every_role(corpus):
    db, embedder = corpus
    insert_document(db, embedder, SAFETY)
    save_expansion(db, "baret", ["koruyucu", "donanım"], updated_by="admin")
    queries = {role: _query(db, "baret vermiyorlar", role) for role in ("ik", "isg", "personel", "admin")}
    assert {tuple(q.terms) for q in queries.values()} == {("baret", "vermi", "koruy", "donan")}
