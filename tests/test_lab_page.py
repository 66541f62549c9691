"""The lab page's gold flow through AppTest, as an admin meets it.

Upload a gold file (a bad one first: nothing imported, the line named), run it across two
embedders (USE and e5, both embedded) and two modes as a background job (a worker run here),
see the recommendation, leak count, results table, charts and downloads; then mark a review-queue
question as gold on the review page and find it in the next run.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from eval import gold_report, goldstore, lab_runs
from ragcore import jobs
from ragcore.access import create_user
from ragcore.answer import questions as qlog
from ragcore.core import STATUS_NEEDS_REVIEW, User
from tests.app_support import REPO, reset_app, set_app_env
from tests.lab_support import GOLD_JSONL, add_company_documents, lab_namespaces
from ui.auth import USER
from ui.markdown import escape_markdown

ADMIN = User(1, "admin", "Yönetici", ("admin",), True)
SET = "küçük şirket"


@pytest.fixture()
def app_env(db, settings, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    set_app_env(monkeypatch, DATABASE_URL=settings.database_url, DATA_DIR=str(settings.data_dir),
                WORKER_IN_APP="false", ADMIN_PASSWORD="yonetici-parola-1")
    reset_app(db)
    yield
    reset_app(db)


def _page(name: str) -> AppTest:
    at = AppTest.from_file(str(REPO / "pages" / name), default_timeout=180)
    at.session_state[USER] = ADMIN
    at.run()
    assert not at.exception, at.exception
    return at


def _click(at: AppTest, label: str) -> None:
    next(b for b in at.button if b.label == label).click()
    at.run()
    assert not at.exception, at.exception


def _run_from_the_form(at: AppTest, db, settings, embedders: list[str], modes: list[str]) -> tuple[int, Path]:
    """Submit the run form, check it is queued, let a worker run the job, redraw the page."""
    at.selectbox(key="lab_run_set").set_value(SET)
    at.multiselect(key="lab_run_embedders").set_value(embedders)
    at.multiselect(key="lab_run_modes").set_value(modes)
    _click(at, "Çalıştır")
    run = lab_runs.get_run(db, at.session_state["lab_gold_current_run"])
    assert run is not None and run.job_id is not None
    assert any("Sırada" in p.proto.text for p in at.get("progress"))  # queued: no worker has taken it yet
    jobs.run_worker(settings.replace(job_heartbeat_seconds=0.5), wait=False)
    job = jobs.get_job(db, run.job_id)
    assert job.status == "succeeded", job.error
    at.run()  # the page drawn after the job: the results in place of the progress
    assert not at.exception, at.exception
    return run.id, Path(lab_runs.get_run(db, run.id).folder)


def test_upload_run_compare_and_review_to_gold(app_env, db, settings) -> None:
    add_company_documents(db, settings)
    at = _page("eval_lab.py")

    # A bad file: the line is named, nothing is imported.
    bad = GOLD_JSONL.splitlines()[0] + "\n" + '{"id": "x1", "question": "Soru?", "answerable": true, "roles": ["ik"]}\n'
    at.file_uploader(key="lab_gold_file").set_value(("bozuk.jsonl", bad.encode(), "application/json"))
    at.text_input(key="lab_gold_name").input(SET)
    _click(at, "İçe aktar")
    errors = " ".join(e.value for e in at.error)
    assert "satır 2" in errors and "expected" in errors, errors
    assert goldstore.list_sets(db) == []

    at.file_uploader(key="lab_gold_file").set_value(("sirket.jsonl", GOLD_JSONL.encode(), "application/json"))
    _click(at, "İçe aktar")
    assert any("sürüm 1" in s.value for s in at.success), [s.value for s in at.success]
    [version] = goldstore.list_sets(db)
    assert (version.name, version.question_count) == (SET, 5)

    # Two embedders × two modes, as a background job.
    _, folder = _run_from_the_form(at, db, settings, ["use", "e5"], ["weighted", "lexical"])
    summary = gold_report.load_summary(folder)
    keys = [c["key"] for c in summary["configurations"]]
    assert keys == ["use·weighted·1000·k5", "use·lexical·1000·k5", "e5·weighted·1000·k5", "e5·lexical·1000·k5"]
    assert summary["run"]["embedders"]["e5"]["name"] != summary["run"]["embedders"]["use"]["name"]
    recommendation = summary["recommendation"]["text"]
    assert recommendation.startswith("Önerilen yapılandırma: ")
    # green only when the picked configuration answers enough right (eval.gold_report.RECOMMENDATION_FLOOR)
    recommended, shown = gold_report.recommendation_shown(summary)
    banners = at.success if recommended else at.info
    assert any(s.value == escape_markdown(shown) for s in banners), ([s.value for s in banners], shown)
    leak_metric = next(m for m in at.metric if m.label == "İzin sızıntısı")
    assert leak_metric.value == "0" and sum(c["leaks"]["count"] for c in summary["configurations"]) == 0
    results = next(d.value for d in at.dataframe if "Yapılandırma" in d.value.columns)
    assert len(results) == 4
    charts = at.get("vega_lite_chart")
    assert len(charts) >= 6, [e.type for e in at.main]  # metric+CI, Recall@k, abstention, leaks, outcomes, latency
    specs = [json.loads(c.proto.spec) for c in charts]
    assert any("eşik" in json.dumps(s, ensure_ascii=False).casefold() for s in specs)  # the gate's curve
    # USE and e5 have a three-outcome model: its curve (both groups of the chosen configuration)
    # instead of the single threshold's, and the shares of what the user met in the summary
    assert all(c["outcome_curve"] and c["gate_outcomes"] for c in summary["configurations"])
    titles = [" ".join(s["title"]["text"]) if isinstance(s.get("title"), dict) else str(s.get("title", ""))
              for s in specs]
    assert len({t for t in titles if t.startswith("Cevap, en yakın parçalar ve ret")}) == 2, "\n".join(titles)
    assert not any(t.startswith("Geri çekilme eğrisi") for t in titles)
    downloads = {b.proto.label for b in at.get("download_button")}
    assert {escape_markdown(x) for x in ("Rapor (HTML)", "Özet (JSON)", "Soru başına sonuçlar (CSV)")} <= downloads
    assert {p.name for p in folder.iterdir()} >= {"summary.json", "per_question.csv", "report.html"}
    assert lab_namespaces(db) == []

    # The review queue: an unanswered question becomes a gold question of the set.
    mehmet = create_user(db, "mehmet", "isg", "mehmet-parola-1")
    qid = qlog.insert_question(db, qlog.question_record(  # its public id: the review page's widget keys
        mehmet, "Tatbikat ne siklikla yapilir?", answer=None, status=STATUS_NEEDS_REVIEW, generator=None,
        llm_called=False))
    review = _page("review.py")
    review.selectbox(key=f"review_gold_set_{qid}").set_value(SET)
    review.selectbox(key=f"review_gold_doc_{qid}").set_value("isg-yonetmelik.pdf")
    review.text_input(key=f"review_gold_pages_{qid}").input("2")
    review.text_input(key=f"review_gold_article_{qid}").input("Madde 4")
    review.text_input(key=f"review_gold_facts_{qid}").input("yilda en az bir kez")
    _click(review, "Doğrulama setine ekle")
    assert any("sürüm 2" in s.value for s in review.success), [s.value for s in review.success]
    assert qlog.review_queue(db) == []  # resolved with it

    # The next run measures it.
    run_id, folder = _run_from_the_form(at, db, settings, ["use"], ["lexical"])
    cases = gold_report.load_cases(folder)
    with db.connection() as conn:  # the lab names a review item by the row's key (admins only see the lab)
        qid = conn.execute("SELECT id FROM questions WHERE public_id = %s", (qid,)).fetchone()[0]
    added = [c for c in cases if c["qid"] == f"inceleme-{qid}"]
    assert [(c["role"], c["answerable"]) for c in added] == [("isg", True)]
    assert added[0]["scores"]["rank"] == 1  # BM25 finds article 4 on page 2 first
    drill = at.selectbox(key=f"lab_drill_q_new{run_id}")  # the per-question drill-down lists it
    assert any(str(o).startswith(f"inceleme-{qid} · isg") for o in drill.options), drill.options
