"""Gold sets in the database (eval/goldstore.py, lab migration 001): versions with their history,
export, a bad file importing nothing, and review-queue questions joining a set."""

from __future__ import annotations

import json

import pytest

from eval import goldset, goldstore
from eval.goldstore import GoldFormatError, GoldSetError, ReviewMark
from ragcore.access import create_user
from ragcore.answer import questions as qlog
from ragcore.core import STATUS_ANSWERED, STATUS_NEEDS_REVIEW
from tests.lab_support import GOLD_JSONL, add_company_documents


def _count(db, table: str) -> int:
    with db.connection() as conn:
        return conn.execute(f"SELECT count(*) FROM public.{table}").fetchone()[0]


def test_import_creates_a_version_and_the_same_content_adds_none(db) -> None:
    version, new = goldstore.import_file(db, "Vardiya soruları", "v.jsonl", GOLD_JSONL.encode(), created_by="admin")
    assert new and version.version == 1 and version.question_count == 5
    assert version.change == "5 soru ile oluşturuldu" and version.source == "v.jsonl" and version.created_by == "admin"
    assert version.sha256 == goldset.fingerprint(goldset.parse_jsonl(GOLD_JSONL))
    again, new = goldstore.import_file(db, "Vardiya soruları", "v2.jsonl", GOLD_JSONL.encode(), created_by="ayse")
    assert not new and again.version == 1
    [listed] = goldstore.list_sets(db)
    assert (listed.name, listed.version, listed.question_count, listed.answerable) == ("Vardiya soruları", 1, 5, 4)


def test_a_changed_file_is_a_new_version_and_old_versions_stay_exact(db) -> None:
    original = goldset.parse_jsonl(GOLD_JSONL)
    v1, _ = goldstore.import_questions(db, "set", original, created_by="admin", source="a.jsonl")
    rows = [json.loads(line) for line in GOLD_JSONL.splitlines()]
    rows[1]["key_facts"] = ["on dort"]  # g2 changed
    del rows[2]  # g3 removed
    rows.append({**rows[0], "id": "g9", "question": "Egitim kac yilda bir tekrarlanir?"})  # g9 added
    changed = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
    v2, new = goldstore.import_file(db, "set", "b.jsonl", changed.encode(), created_by="mehmet")
    assert new and v2.version == 2 and v2.question_count == 5
    assert v2.change == "1 soru eklendi, 1 soru çıkarıldı, 1 soru değişti; 3 soru aynı kaldı"
    _, first = goldstore.questions(db, v1.set_id, 1)
    assert first == original and goldset.fingerprint(first) == v1.sha256  # version 1 exactly as imported
    _, second = goldstore.questions(db, v1.set_id)
    assert [q.id for q in second] == ["g1", "g2", "g4", "g5", "g9"]  # a changed question keeps its place
    assert second[1].key_facts == ("on dort",) and goldset.fingerprint(second) == v2.sha256
    history = goldstore.history(db, v1.set_id)
    assert [(h.version, h.created_by, h.source) for h in history] == [(2, "mehmet", "b.jsonl"), (1, "admin", "a.jsonl")]


def test_export_gives_back_the_version_in_both_formats(db) -> None:
    v, _ = goldstore.import_file(db, "set", "a.jsonl", GOLD_JSONL.encode(), created_by=None)
    _, found = goldstore.questions(db, v.set_id, 1)
    assert goldset.to_jsonl(found) == GOLD_JSONL
    assert goldset.parse_csv(goldset.to_csv(found)) == found


def test_a_bad_file_imports_nothing(db) -> None:
    bad = GOLD_JSONL + '{"id": "g6", "question": "?", "answerable": true, "roles": ["ik"]}\n'
    with pytest.raises(GoldFormatError) as info:
        goldstore.import_file(db, "set", "bad.jsonl", bad.encode(), created_by="admin")
    assert info.value.problems == ["satır 6, alan “expected”: cevaplanabilir bir soru en az bir beklenen belge "
                                   "göstermeli"]
    assert _count(db, "gold_sets") == 0 and _count(db, "gold_questions") == 0 and _count(db, "gold_set_versions") == 0


def test_the_sample_imports_with_one_call(db) -> None:
    version, new = goldstore.import_sample(db, created_by="admin")
    assert new and version.name == goldstore.SAMPLE_NAME and version.question_count == 64
    assert goldstore.import_sample(db, created_by="admin")[1] is False


def test_unknown_set_and_version(db) -> None:
    with pytest.raises(GoldSetError, match="adlı bir doğrulama seti yok"):
        goldstore.find_set(db, "yok")
    v, _ = goldstore.import_file(db, "set", "a.jsonl", GOLD_JSONL.encode(), created_by=None)
    with pytest.raises(GoldSetError, match="3. sürüm"):
        goldstore.get_version(db, v.set_id, 3)


# --------------------------------------------------------------------------- from the review queue


def _review_item(db, username: str, role: str, question: str, **outcome) -> int:
    """The item's key, as the review page (an admin's, inside the server) hands it to the lab."""
    user = create_user(db, username, role, f"{username}-parola-1")
    outcome = {"answer": None, "status": STATUS_NEEDS_REVIEW, "generator": None, "llm_called": False, **outcome}
    public_id = qlog.insert_question(db, qlog.question_record(user, question, **outcome))
    with db.connection() as conn:
        return conn.execute("SELECT id FROM questions WHERE public_id = %s", (public_id,)).fetchone()[0]


def test_a_review_question_joins_a_set_as_a_new_version(db, settings) -> None:
    add_company_documents(db, settings)
    v1, _ = goldstore.import_file(db, "set", "a.jsonl", GOLD_JSONL.encode(), created_by="admin")
    qid = _review_item(db, "mehmet", "isg", "Tatbikat ne siklikla yapilir?")
    v2 = goldstore.add_from_review(db, ReviewMark(qid, "set", document="isg-yonetmelik.pdf", pages=(2,),
                                                  article="Madde 4", key_facts=("yilda en az bir kez",)),
                                   created_by="admin")
    assert v2.version == 2 and v2.change == f"“inceleme-{qid}” eklendi (inceleme #{qid})"
    _, found = goldstore.questions(db, v1.set_id)
    added = found[-1]
    assert added.id == f"inceleme-{qid}" and added.question == "Tatbikat ne siklikla yapilir?"
    assert added.roles == ("isg",) and added.answerable and added.key_facts == ("yilda en az bir kez",)
    assert added.expected == (goldset.Expected("isg-yonetmelik.pdf", "Madde 4", (2,)),)
    with db.connection() as conn:
        source = conn.execute("SELECT source_question_id FROM public.gold_questions WHERE qid = %s",
                              (added.id,)).fetchone()[0]
    assert source == qid
    with pytest.raises(GoldSetError, match="zaten var"):
        goldstore.add_from_review(db, ReviewMark(qid, "set", unanswerable=True), created_by="admin")


def test_not_in_our_documents_makes_an_unanswerable_question_in_a_new_set(db, settings) -> None:
    qid = _review_item(db, "ayse", "personel", "Servis saat kacta kalkar?", answer="...", status=STATUS_ANSWERED)
    version = goldstore.add_from_review(db, ReviewMark(qid, "Yeni set", unanswerable=True), created_by="admin")
    assert (version.name, version.version, version.question_count) == ("Yeni set", 1, 1)
    _, [question] = goldstore.questions(db, version.set_id)
    assert not question.answerable and question.expected == () and question.roles == ("personel",)


def test_a_review_mark_the_asking_role_cannot_use_is_refused(db, settings) -> None:
    add_company_documents(db, settings)
    qid = _review_item(db, "mehmet", "isg", "Yillik izin kac gun?")
    with pytest.raises(GoldSetError, match=r"\(isg\) “ik-yonetmelik.pdf” belgesini okuyamıyor"):
        goldstore.add_from_review(db, ReviewMark(qid, "set", document="ik-yonetmelik.pdf"), created_by="admin")
    with pytest.raises(GoldSetError, match="adlı yüklenmiş bir belge yok"):
        goldstore.add_from_review(db, ReviewMark(qid, "set", document="yok.pdf"), created_by="admin")
    with pytest.raises(GoldSetError, match="Doğru belgeyi seçin"):
        goldstore.add_from_review(db, ReviewMark(qid, "set"), created_by="admin")
    assert _count(db, "gold_sets") == 0
