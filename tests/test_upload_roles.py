"""Safe upload defaults (issue 22): the upload form preselects no role and refuses an upload
without one; a choice that opens the document to every employee ("Tüm personel", "Herkes")
asks for a confirmation that says so; nothing is staged or queued before that."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from ragcore import jobs
from ragcore.store import Database
from tests import pdfs
from tests.test_app import (
    ADMIN_PASSWORD,
    app_env,  # noqa: F401 (the fixture, used below)
    button,
    login,
    new_app,
    shown,
)
from ui import context
from ui.upload import NO_ROLE, WIDE_CONFIRM_LABEL, WIDE_UNCONFIRMED, upload_document

pytestmark = pytest.mark.usefixtures("app_env")


@pytest.fixture(autouse=True)
def no_worker(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WORKER_IN_APP", "false")  # a queued job stays queued: what was queued is visible


@pytest.fixture()
def data_dir(request: pytest.FixtureRequest) -> Path:
    """The app's DATA_DIR (what the app_env fixture set up)."""
    return request.getfixturevalue("app_env")


def _stored(db: Database, data_dir: Path) -> tuple[int, int, list[str]]:
    """Jobs, documents and staged files: what an upload leaves behind."""
    with db.connection() as conn:
        counts = conn.execute("SELECT (SELECT count(*) FROM jobs), (SELECT count(*) FROM documents)").fetchone()
    staged = sorted(p.name for p in data_dir.rglob("*.pdf"))
    return counts[0], counts[1], staged


def _documents_page() -> AppTest:
    admin = login(new_app(), "admin", ADMIN_PASSWORD)
    admin.switch_page("pages/documents.py").run()
    return admin


def _choose_file(admin: AppTest) -> AppTest:
    """A file in the form's picker (a form keeps it until submitted; chosen after the roles, as
    AppTest drops a form's unsent value on a rerun the browser would keep it through)."""
    admin.get("file_uploader")[0].set_value(("maas-listesi.pdf", pdfs.law_pdf(), "application/pdf"))
    return admin


def _plain(values: list[str]) -> str:
    return re.sub(r"\\(.)", r"\1", "\n".join(values))


def _submit(admin: AppTest) -> AppTest:
    button(admin, "Yükle").click()
    admin.run()
    assert not admin.exception, admin.exception
    return admin


def test_no_role_is_preselected_and_an_upload_without_one_is_refused(db: Database, data_dir: Path) -> None:
    admin = _choose_file(_documents_page())
    assert admin.multiselect(key="doc_upload_roles").value == []
    _submit(admin)
    assert NO_ROLE in shown(admin.error)
    assert _stored(db, data_dir) == (0, 0, [])
    assert admin.get("file_uploader")[0].value is not None  # the chosen file is still there: nothing lost
    admin.multiselect(key="doc_upload_roles").set_value(["isg"])
    _submit(admin)
    (job,) = jobs.list_jobs(db)
    assert job.arguments["roles"] == ["isg"]
    assert admin.multiselect(key="doc_upload_roles").value == []  # the next upload starts from no role again


@pytest.mark.parametrize(("choice", "names"), [(["personel"], "“Tüm personel” rolündeki"), (["*"], "“Herkes” seçildi")])
def test_a_choice_open_to_every_employee_asks_for_a_confirmation(db: Database, data_dir: Path, choice: list[str],
                                                                 names: str) -> None:
    admin = _documents_page()
    admin.multiselect(key="doc_upload_roles").set_value(choice).run()
    warning = _plain(shown(admin.warning))
    assert "Bu doküman tüm çalışanlara açılacak" in warning and names in warning, warning
    (confirm,) = [c for c in admin.checkbox if c.label == WIDE_CONFIRM_LABEL]
    assert confirm.value is False

    _submit(_choose_file(admin))  # not confirmed: refused, nothing staged or queued
    assert WIDE_UNCONFIRMED in shown(admin.error)
    assert _stored(db, data_dir) == (0, 0, [])

    [c for c in admin.checkbox if c.label == WIDE_CONFIRM_LABEL][0].check()
    _submit(admin)  # the same file, now confirmed
    (job,) = jobs.list_jobs(db)
    assert job.status == "queued" and set(choice) - {"*"} <= set(job.arguments["roles"])


def test_a_narrow_choice_needs_no_confirmation(db: Database) -> None:
    admin = _documents_page()
    admin.multiselect(key="doc_upload_roles").set_value(["ik"]).run()
    assert not [c for c in admin.checkbox if c.label == WIDE_CONFIRM_LABEL]
    assert not any("tüm çalışanlara" in w for w in shown(admin.warning))
    _submit(_choose_file(admin))
    (job,) = jobs.list_jobs(db)
    assert job.arguments["roles"] == ["ik"]


def test_the_handler_refuses_what_the_form_would_not_send(db: Database, data_dir: Path) -> None:
    from ragcore.access import get_user

    new_app()  # builds the context
    ctx = context._app_context()
    admin = get_user(db, "admin")
    assert upload_document(ctx, admin, "a.pdf", pdfs.law_pdf(), []).message == NO_ROLE
    assert upload_document(ctx, admin, "a.pdf", pdfs.law_pdf(), ["isg", "personel"]).message == WIDE_UNCONFIRMED
    assert _stored(db, data_dir) == (0, 0, [])
    assert upload_document(ctx, admin, "a.pdf", pdfs.law_pdf(), ["isg", "personel"], wide_access_confirmed=True).ok
