"""bench/retrieval.py's measuring path on a tiny corpus: the benchmark must run on today's
retrieval code (a changed signature once broke it after its 10k build, 45 minutes into a run)."""

from __future__ import annotations

import pytest

from bench import retrieval as bench
from ragcore import store as dbmod
from ragcore.access import create_user
from ragcore.retrieval import MODES
from tests.test_eval_retrievers import HashEmbedder

NAMESPACE = "test_bench_measure"
TEXTS = [
    "İşveren iş sağlığı ve güvenliği risk değerlendirmesi yapmakla yükümlüdür.",
    "Yıllık ücretli izin süresi on dört günden az olamaz.",
    "İş kazası üç iş günü içinde Sosyal Güvenlik Kurumuna bildirilir.",
    "Çalışanlara eğitim verilir ve eğitimin maliyeti çalışana yansıtılamaz.",
    "Gece çalışmaları yedi buçuk saati geçemez.",
    "Kısmi süreli iş sözleşmesi yazılı olarak yapılır.",
]
QUESTIONS = ["İş kazası kaç gün içinde bildirilir?", "Yıllık izin kaç gündür?"]


@pytest.fixture()
def bench_db(pg_url: str):
    db = dbmod.Database(pg_url, NAMESPACE)
    try:
        dbmod.drop_namespace(db, NAMESPACE)
        db.close()
        db = dbmod.Database(pg_url, NAMESPACE, min_size=1, max_size=1)  # one backend, as the bench runs
        dbmod.migrate(db)
        dbmod.ensure_embedding_space(db, HashEmbedder.name, HashEmbedder.dim)
        yield db
    finally:
        dbmod.drop_namespace(db, NAMESPACE)
        db.close()


def test_build_latencies_and_explain_run_on_the_retrieval_code(bench_db) -> None:
    embedder = HashEmbedder()
    create_user(bench_db, "bench-three-roles", bench.THREE_ROLES, "bench-parola-1")  # as bench.run does
    timings = bench.build(bench_db, 120, TEXTS, embedder.embed_passages(TEXTS))
    assert timings and all(seconds >= 0 for seconds in timings.values())
    with bench_db.connection() as conn:
        assert conn.execute("SELECT count(*) FROM chunks").fetchone()[0] == 120
    questions = bench.CachedQuestions(embedder, QUESTIONS, embedder.embed_queries(QUESTIONS))
    askers = ("admin", "isg", bench.THREE_ROLE_READER)
    cells = bench.latencies(bench_db, questions, QUESTIONS, askers, postings_budget=25000)
    assert set(cells) == {(mode, role) for mode in MODES for role in askers}
    assert all(len(cell["ms"]) == len(QUESTIONS) and cell["slowest"] in QUESTIONS for cell in cells.values())
    assert all(len(cell["postings_read"]) == len(QUESTIONS) for cell in cells.values())
    for mode in MODES:  # the three-role row the section prints reads every cell it needs
        cells.update({(mode, role): cells[(mode, "isg")] for role in bench.THREE_ROLES if role != "isg"})
        row = bench._three_role_row(mode, cells)
        assert row.startswith(f"| {mode} |") and row.count("|") == 9, row
    against = bench.budget_against_exact(bench_db, questions, QUESTIONS, askers, 1)
    assert set(against) == {"budget", "exact"} and all(set(c) == {("weighted", r) for r in askers} for c in against.values())
    assert all(len(cell["ms"]) == len(QUESTIONS) for c in against.values() for cell in c.values())
    assert not any(cell["capped"] for cell in against["exact"].values())
    fidelity = bench.budget_fidelity(bench_db, QUESTIONS, askers, 1)  # a budget that binds every plan it can
    assert set(fidelity) == set(askers)
    assert all(f["questions"] == len(QUESTIONS) and 0 <= f["same_top10"] <= f["questions"]
               and 0 <= f["pool_overlap_min"] <= f["pool_overlap"] <= 1 for f in fidelity.values())
    for mode in MODES:
        plan = bench.explain(bench_db, questions, QUESTIONS[0], "isg", mode, postings_budget=25000)
        assert "-- dense leg, fusion, evidence" in plan and "Execution Time" in plan, plan
