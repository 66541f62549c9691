"""The lab as a new user meets it (issue 40): the run form preselects what the app itself runs,
no green "önerilen" banner for a configuration that answers few questions right, the "Bütün
ölçüler" table a measure a row, and the per-question CSV in Turkish (stored columns on request).
The .docx in a gold run's corpus is tests/test_gold_run.py's; the charts' fit tests/test_lab_layout.py's."""

from __future__ import annotations

import csv
import io
import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from eval import gold_report, goldstore
from eval.report import read_text
from ragcore.core import Settings, User
from tests.app_support import REPO, reset_app, set_app_env
from tests.lab_support import GOLD_JSONL
from ui.auth import USER
from ui.lab_gold_runs import all_measures, app_configuration

ADMIN = User(1, "admin", "Yönetici", ("admin",), True)
EVERYDAY = REPO / "docs" / "eval_runs" / "r12-gold-everyday-dev"  # one configuration, 16.8 % right answers
NO_OLLAMA = "http://127.0.0.1:9"


# --------------------------------------------------------------------------- the app's configuration


@pytest.mark.parametrize(("env", "expected"), [
    ({"embed_backend": "auto"}, {"embedders": ["e5"], "modes": ["weighted"], "sizes": [1000], "ks": [5]}),
    ({"embed_backend": "use", "retrieval_mode": "rrf", "chunk_size": 500, "top_k": 8},
     {"embedders": ["use"], "modes": ["rrf"], "sizes": [500], "ks": [8]}),
    ({"embed_backend": "e5", "chunk_size": 700, "top_k": 4}, {"embedders": ["e5"], "modes": ["weighted"], "sizes": [],
                                                              "ks": []}),
])
def test_the_form_preselects_what_the_app_runs(env, expected) -> None:
    """auto without Ollama is the embedded e5 (ragcore.embed's choice), whose measured mode is weighted."""
    assert app_configuration(Settings(ollama_base_url=NO_OLLAMA, **env)) == expected


@pytest.fixture()
def lab_env(db, settings, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    set_app_env(monkeypatch, DATABASE_URL=settings.database_url, DATA_DIR=str(settings.data_dir),
                WORKER_IN_APP="false", ADMIN_PASSWORD="yonetici-parola-1", EMBED_BACKEND="auto")
    reset_app(db)
    yield
    reset_app(db)


def test_a_new_user_finds_the_apps_own_embedder_and_mode_chosen(lab_env, db) -> None:
    goldstore.import_file(db, "küçük şirket", "g.jsonl", GOLD_JSONL.encode(), created_by="admin")
    at = AppTest.from_file(str(REPO / "pages" / "eval_lab.py"), default_timeout=180)
    at.session_state[USER] = ADMIN
    at.run()
    assert not at.exception, at.exception
    assert at.multiselect(key="lab_run_embedders").value == ["e5"]  # the app runs e5, not USE
    assert at.multiselect(key="lab_run_modes").value == ["weighted"]
    assert (at.multiselect(key="lab_run_sizes").value, at.multiselect(key="lab_run_ks").value) == ([1000], [5])


# --------------------------------------------------------------------------- the recommendation


def _show(folder: str) -> None:
    from pathlib import Path

    from ui.lab_gold_runs import render_gold_results

    render_gold_results(Path(folder), key="t")


def _with_right_answers(tmp_path: Path, share: float) -> Path:
    folder = tmp_path / "run"
    shutil.copytree(EVERYDAY, folder)
    summary = gold_report.load_summary(folder)
    summary["configurations"][0]["answers"]["answerable"]["rates"]["correct"]["mean"] = share
    (folder / gold_report.SUMMARY).write_text(json.dumps(summary, ensure_ascii=False), encoding="utf-8")
    return folder


def test_no_green_recommendation_below_the_floor(tmp_path: Path) -> None:
    summary = gold_report.load_summary(EVERYDAY)
    assert gold_report.right_answer_rate(summary, summary["recommendation"]["chosen"]) < gold_report.RECOMMENDATION_FLOOR
    recommended, text = gold_report.recommendation_shown(summary)
    assert not recommended and text.startswith("Öneri yok: en iyi görünen yapılandırma (e5 · ağırlıklı")
    assert "%16,8" in text and "%50" in text
    at = AppTest.from_function(_show, args=(str(EVERYDAY),), default_timeout=60).run()
    assert not at.exception, at.exception
    assert not at.success, [s.value for s in at.success]
    assert any("Öneri yok" in i.value for i in at.info)
    assert "önerilen" not in [row["Not"] for row in gold_report.results_rows(summary)]


def test_a_configuration_above_the_floor_is_recommended_in_green(tmp_path: Path) -> None:
    folder = _with_right_answers(tmp_path, gold_report.RECOMMENDATION_FLOOR)
    recommended, text = gold_report.recommendation_shown(gold_report.load_summary(folder))
    assert recommended and text == gold_report.load_summary(folder)["recommendation"]["text"]
    at = AppTest.from_function(_show, args=(str(folder),), default_timeout=60).run()
    assert [s.value for s in at.success] and not any("Öneri yok" in i.value for i in at.info)


# --------------------------------------------------------------------------- tables and downloads


def test_all_measures_are_a_measure_a_row() -> None:
    rows = gold_report.results_rows(gold_report.load_summary(EVERYDAY))
    table = all_measures(rows)
    assert list(table[0]) == ["Ölçü", rows[0]["Yapılandırma"]]  # as many columns as configurations, plus one
    assert [r["Ölçü"] for r in table] == list(rows[0])[1:]


def test_the_per_question_csv_is_turkish_unless_a_script_asks_for_the_stored_columns() -> None:
    summary = gold_report.load_summary(EVERYDAY)
    turkish = gold_report.per_question_csv(EVERYDAY, summary).decode("utf-8")
    assert turkish.startswith("\ufeffYapılandırma;Soru no;Rol;Cevaplanabilir;Soru;")
    rows = list(csv.DictReader(io.StringIO(turkish.removeprefix("\ufeff"), newline=""), delimiter=";"))
    assert {r["Yapılandırma"] for r in rows} == {"e5 · ağırlıklı · 1000 karakter · k=5"}
    assert {r["Cevaplanabilir"] for r in rows} <= {"evet", "hayır"}
    assert {r["Durum"] for r in rows} <= set(gold_report.STATUS_LABELS.values())
    assert {r["Sonuç"] for r in rows} <= set(gold_report.OUTCOME_LABELS.values())
    assert any("," in r["Arama süresi (ms)"] for r in rows) and not any("." in r["Arama süresi (ms)"] for r in rows)
    english = gold_report.per_question_csv(EVERYDAY, summary, english=True).decode("utf-8")
    assert english == read_text(EVERYDAY / "per_question.csv") and english.startswith("configuration,qid,role,")


def test_the_page_offers_the_csv_with_the_english_option() -> None:
    at = AppTest.from_function(_show, args=(str(EVERYDAY),), default_timeout=60).run()
    assert [c.label for c in at.checkbox] == ["İngilizce sütun adları"]
    assert any("CSV" in b.proto.label for b in at.get("download_button"))
