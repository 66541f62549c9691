"""The Denetim page through AppTest on the real database: an admin sees every user's questions with
what they were shown, filters them, downloads them and sees the usage charts; the page says what
is recorded and for how long; no other role can open it, and a normal user's pages show nobody
else's questions.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragcore.access import create_user
from ragcore.answer import question_record
from ragcore.answer.questions import insert_question
from ragcore.core import ROLES, Source
from ragcore.store import Database
from tests.test_app import (
    ADMIN_PASSWORD,
    app_env,  # noqa: F401 (the fixture, used below)
    login,
    new_app,
    texts,
)
from ui.audit import RECORDED, retention_sentence
from ui.navigation import allowed_pages

AYSE_ASKS = "Doğum izni kaç hafta sürer?"
MEHMET_ASKS = "Baret takmak zorunlu mu?"


def _log(db: Database) -> None:
    with db.connection() as conn:
        law = conn.execute("INSERT INTO documents (title, filename, sha256, size_bytes, page_count, allowed_roles) "
                           "VALUES ('İş Kanunu', 'is.pdf', %s, 1, 40, ARRAY['ik']) RETURNING id",
                           ("c" * 64,)).fetchone()[0]
    ayse = create_user(db, "ayse", "ik", "ayse-parola-1")
    mehmet = create_user(db, "mehmet", "isg", "mehmet-parola-1")
    source = Source(1, 1, law, "İş Kanunu", "is.pdf", 31, 31, "Madde 74", 0.5, "metin")
    insert_question(db, question_record(ayse, AYSE_ASKS, answer="On altı hafta [1].", status="answered",
                                        generator="extractive", llm_called=False, sources=[source], cited=(1,),
                                        outcome="answer"))
    insert_question(db, question_record(mehmet, MEHMET_ASKS, answer=None, status="needs_review", generator=None,
                                        llm_called=False, outcome="refused"))


def _table(at) -> list[dict]:
    return at.dataframe[0].value.to_dict("records")


def test_an_admin_reads_every_users_questions_and_the_usage(app_env: Path, db: Database) -> None:  # noqa: F811
    _log(db)
    at = login(new_app(), "admin", ADMIN_PASSWORD)
    at.switch_page("pages/audit.py").run()
    assert not at.exception, at.exception
    assert at.title[0].value == "Denetim"
    shown = texts(at)
    assert RECORDED in shown and "365 gün saklanır" in shown
    rows = _table(at)
    assert [r["Kullanıcı"] for r in rows] == ["mehmet", "ayse"]
    ayse = rows[1]
    assert (ayse["Soru"], ayse["Roller"], ayse["Sonuç"]) == (AYSE_ASKS, "İnsan kaynakları", "Cevap verildi")
    assert ayse["Gösterilen kaynaklar"].startswith("[1] İş Kanunu · Madde 74 · s. 31 · sürüm cccccccccccc · ")
    assert rows[0]["Sonuç"] == "Cevap yok (dokümanlarda bulunamadı)"
    assert [b.proto.label for b in at.get("download_button")] == ["Kayıtları indir (Excel için CSV)"]
    titles = [json.loads(c.proto.spec).get("title") for c in at.get("vega_lite_chart")]
    assert titles == ["Günlük soru sayısı", "Sonuçların payı", "En çok kaynak gösterilen dokümanlar",
                      "En sık cevapsız kalan sorular", "Kullanıcıların geri bildirimi"]
    assert [t.label for t in at.tabs] == ["Kayıtlar", "Kullanım"]

    at.selectbox(key="audit_user").select("ayse").run()
    assert [r["Soru"] for r in _table(at)] == [AYSE_ASKS]
    at.selectbox(key="audit_user").select(None).run()
    at.selectbox(key="audit_role").select("isg").run()
    assert [r["Soru"] for r in _table(at)] == [MEHMET_ASKS]


def test_no_other_role_can_open_the_page_and_normal_pages_show_no_one_elses_questions(
        app_env: Path, db: Database) -> None:  # noqa: F811
    for role in ROLES:
        assert ("pages/audit.py" in allowed_pages(role)) == (role == "admin")
    assert "pages/audit.py" in allowed_pages("denetci")
    _log(db)
    at = login(new_app(), "mehmet", "mehmet-parola-1")
    with pytest.raises(ValueError):
        at.switch_page("pages/audit.py")
    for page in allowed_pages("isg"):
        at.switch_page(page).run()
        assert not at.exception, (page, at.exception)
        assert AYSE_ASKS not in texts(at), page


def test_a_real_auditor_opens_the_page_and_reads_every_users_questions(app_env: Path, db: Database) -> None:  # noqa: F811
    """`denetci` is a role of the registry (migration 021) a user holds, with other roles too: the
    page opens for a user holding it, and the navigation offers it to any set of roles holding it."""
    assert "pages/audit.py" in allowed_pages("denetci+isg")
    assert "pages/audit.py" not in allowed_pages("ik+isg")
    _log(db)
    create_user(db, "denetim", ["denetci", "isg"], "denetim-parola-1")
    at = login(new_app(), "denetim", "denetim-parola-1")
    at.switch_page("pages/audit.py").run()
    assert not at.exception, at.exception
    assert at.title[0].value == "Denetim"
    assert [r["Kullanıcı"] for r in _table(at)] == ["mehmet", "ayse"]


def test_the_page_says_how_long_rows_are_kept() -> None:
    assert retention_sentence(365).startswith("Her kayıt 365 gün saklanır;")
    assert retention_sentence(1500).startswith("Her kayıt 1.500 gün saklanır;")
    assert "süresiz" in retention_sentence(0)
