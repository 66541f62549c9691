"""The conversation run (eval/conversation_run.py) on a tiny law: two conversations of one
personel user over a generated three-article PDF, the deterministic hash embedder, lexical mode,
the extractive generator. Covered: the summary's groups and target block, a follow-up resolved
with the previous turn's subject and scored against its gold article, a subject change kept
apart and not rewritten, the files of the run card, and the namespace dropped."""

from __future__ import annotations

import hashlib
import json

from eval.conversation_run import FIRST, FOLLOW_UP, SUBJECT_CHANGE, load_cases, run_conversations
from eval.conversations import parse_conversations
from eval.lab_corpus import CorpusDocument
from tests.fakes import HashEmbedder
from tests.lab_support import lab_namespaces
from tests.pdfs import text_pdf

PAGES = [
    "Yillik ucretli izin\n"
    "MADDE 1 - (1) Yillik ucretli izin suresi bir yildan bes yila kadar on dort gundur. "
    "Bes yildan fazla calisanlara yirmi gun izin verilir.",
    "Fazla calisma\n"
    "MADDE 2 - (1) Fazla calisma ucreti yuzde elli zamli odenir.\n"
    "Is kazasi\n"
    "MADDE 3 - (1) Is kazasi uc is gunu icinde Kuruma bildirilir.",
]
LAW = "kanun.pdf"


def _turn(question: str, standalone: str, follow_up: bool, article: str, page: int, fact: str) -> dict:
    return {"question": question, "standalone": standalone, "follow_up": follow_up, "answerable": True,
            "expected": [{"document": LAW, "article": article, "pages": [page]}], "roles": ["personel"],
            "key_facts": [fact]}


CONVERSATIONS = [
    {"id": "k1", "split": "test", "turns": [
        _turn("Yillik ucretli izin kac gundur?", "Yillik ucretli izin kac gundur?", False, "Madde 1", 1,
              "on dort gundur"),
        _turn("peki bes yildan fazlaysa?", "Bes yildan fazla calisanin yillik ucretli izni kac gundur?", True,
              "Madde 1", 1, "yirmi gun")]},
    {"id": "k2", "split": "test", "turns": [
        _turn("Fazla calisma ucreti ne kadar zamli odenir?", "Fazla calisma ucreti ne kadar zamli odenir?", False,
              "Madde 2", 2, "yuzde elli"),
        _turn("Is kazasi kac gun icinde Kuruma bildirilir?", "Is kazasi kac gun icinde Kuruma bildirilir?", False,
              "Madde 3", 2, "uc is gunu")]},
]


def test_a_conversation_run_resolves_follow_ups_and_reports_them_apart(db, settings, tmp_path) -> None:
    conversations = parse_conversations("".join(json.dumps(c) + "\n" for c in CONVERSATIONS))
    data = text_pdf(PAGES)
    path = tmp_path / LAW
    path.write_bytes(data)
    documents = [CorpusDocument(LAW, None, hashlib.sha256(data).hexdigest(), ("personel",), path)]
    settings = settings.replace(chunk_size=300, chunk_overlap=30, retrieval_mode="lexical")
    stages: list[str] = []
    summary = run_conversations(db, settings, conversations, documents, HashEmbedder(), tmp_path / "run",
                                lambda stage, done, total: stages.append(stage), split="test",
                                namespace="lab_test_conversations")

    assert stages[0] == "index" and stages[-1] == "ask"
    assert "lab_test_conversations" not in lab_namespaces(db)
    assert summary["run"]["code"]["commit"] and "dirty" in summary["run"]["code"]
    assert summary["data"]["turns"] == 4 and summary["index"]["chunks"] >= 3
    groups = summary["groups"]
    assert {name: g["turns"] for name, g in groups.items()} == {
        "first_turns": 2, "follow_ups_resolved": 1, "follow_ups_typed": 1, "follow_ups_standalone": 1,
        "subject_change_resolved": 1, "subject_change_typed": 1, "subject_change_standalone": 1}
    assert set(groups["first_turns"]["retrieval"]) >= {"recall@5", "ndcg@10"}
    assert groups["first_turns"]["first_read"]["n"] == 2
    assert summary["target"]["n"] == 1 and summary["target"]["limit"] == 0.05
    # what resolution costs a turn with its own subject: resolved vs typed alone
    assert summary["subject_changes"]["n"] == groups["subject_change_resolved"]["answerable"]

    records = {r["id"]: r for r in load_cases(tmp_path / "run")}
    assert [records[i]["kind"] for i in ("k1.1", "k1.2", "k2.1", "k2.2")] == [FIRST, FOLLOW_UP, FIRST,
                                                                               SUBJECT_CHANGE]
    follow_up = records["k1.2"]
    # resolved with the previous questions' words (not the cited article), asked as such
    assert follow_up["rewritten"] and follow_up["typed"] == "peki bes yildan fazlaysa?"
    assert "izin" in follow_up["resolved"].casefold() and "madde" not in follow_up["resolved"].casefold()
    assert follow_up["resolved_case"]["question"] == follow_up["resolved"]
    assert follow_up["typed_case"]["question"] == follow_up["typed"]
    # its Recall is against the gold article (or its page): Madde 1's chunk is the relevant one
    resolved = follow_up["resolved_case"]
    assert resolved["relevant_total"] >= 1 and resolved["scores"]["recall@5"] == 1.0
    assert all(s["relevant"] == (s["article"] == "Madde 1") for s in resolved["sources"])
    assert summary["target"]["follow_up_resolved"] == 1.0
    # a question with its own subject stays as typed and is not counted with the follow-ups
    change = records["k2.2"]
    assert not change["rewritten"] and change["resolved"] == change["typed"]
