"""The lab page through AppTest: an earlier run on disk is listed, tabled, charted and drilled into."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from eval import tquad
from eval.report import runs_root, write_retrieval_run
from eval.sweep import SweepConfig, make_workspace, run_sweep
from ragcore.core import Settings, User
from tests.app_support import reset_app, set_app_env
from tests.conftest import TQUAD_DIR
from tests.test_eval_retrievers import HashEmbedder
from ui.auth import USER

PAGE = str(Path(__file__).resolve().parent.parent / "pages" / "eval_lab.py")
needs_tquad = pytest.mark.needs_data("tquad")


@needs_tquad
def test_page_lists_and_shows_an_earlier_run(db, pg_url, tmp_path, monkeypatch):
    data_dir = tmp_path / "data"
    set_app_env(monkeypatch, DATABASE_URL=pg_url, DATA_DIR=str(data_dir), TQUAD_DIR=str(TQUAD_DIR),
                ADMIN_PASSWORD="yonetici-parola-1")
    settings = Settings.from_env()
    ws = make_workspace(settings, cache_db=db, embedder_factory=lambda s: HashEmbedder(),
                        corpus=tquad.cached_corpus(str(TQUAD_DIR)))
    result = run_sweep(settings, SweepConfig(["bm25", "bm25-prefix5"], [1000], limit=30), workspace=ws)
    write_retrieval_run(result, runs_root(settings) / "20260101-000000-retrieval", settings)

    reset_app(db)
    at = AppTest.from_file(PAGE, default_timeout=120)
    at.session_state[USER] = User(1, "admin", "Yönetici", ("admin",), True)
    at.run()
    assert not at.exception, at.exception
    assert at.title[0].value == "Değerlendirme laboratuvarı"
    assert len(at.dataframe) >= 2  # runs list + results table
    texts = [t.value for t in at.text]
    assert any(t.startswith("Derlem: 697 makale (56") for t in texts)
    assert any(t.startswith("Beklenen cevap: ") for t in texts)
    reset_app(db)
