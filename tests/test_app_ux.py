"""AppTest coverage for issue 15: role help and "Herkes", the sidebar, Turkish search results,
the no-model badge, the review queue's quotes, the document card's title edit and delete
dialog, and the password message next to its form."""

from __future__ import annotations

import re

import pytest

from ragcore.access import create_user
from ragcore.answer import questions
from ragcore.core import ROLES, Source
from ragcore.documents import get_document, ingest_pdf, list_documents
from ragcore.embed import USEEmbedder
from ragcore.store import Database
from tests import pdfs
from tests.test_app import (
    ADMIN_PASSWORD,
    app_env,  # noqa: F401 (the fixture, used below)
    button,
    login,
    new_app,
    texts,
)

pytestmark = pytest.mark.usefixtures("app_env")


@pytest.fixture(scope="module")
def embedder() -> USEEmbedder:
    return USEEmbedder()


def _ingest(db: Database, settings, embedder, roles: list[str], title: str | None = None) -> int:
    data = pdfs.text_pdf(["Madde 14 - Isveren is kazasini uc is gunu icinde Sosyal Guvenlik Kurumuna bildirir.",
                          "Madde 15 - Saglik gozetimi yapilir."])
    return ingest_pdf(db, settings, embedder, data, filename="is-kazasi.pdf", roles=roles, title=title).document_id


def _flat(node) -> list:
    """Every element under `node`, in page order (blocks walked depth first)."""
    out = []
    for child in getattr(node, "children", {}).values():
        out.append(child)
        out.extend(_flat(child))
    return out


def test_sidebar_names_the_user_once() -> None:
    admin = login(new_app(), "admin", ADMIN_PASSWORD)
    side = [re.sub(r"\\(.)", r"\1", m.value) for m in [*admin.sidebar.markdown, *admin.sidebar.caption]]
    assert "**Yönetici**" in side and "Kullanıcı adı: admin" in side
    assert not any("Yönetici" in c.value for c in admin.sidebar.caption)  # not "Yönetici / Yönetici"


def test_everyone_choice_opens_a_document_to_every_role(db: Database, settings, embedder) -> None:
    doc_id = _ingest(db, settings, embedder, ["isg", "personel"])
    admin = login(new_app(), "admin", ADMIN_PASSWORD)
    admin.switch_page("pages/documents.py").run()
    picker = admin.multiselect(key=f"doc_roles_{get_document(db, doc_id, 'admin').public_id}")
    assert "“Tüm personel” yalnızca personel rolüdür" in picker.help and "herkese açık" not in picker.help
    assert "Herkes" in [picker.format_func(o) for o in picker.options] if hasattr(picker, "format_func") \
        else "Herkes" in picker.options
    picker.set_value(["*"])
    button(admin, "Rolleri kaydet").click()
    admin.run()
    assert not admin.exception, admin.exception
    assert sorted(get_document(db, doc_id, "admin").allowed_roles) == sorted(ROLES)
    assert "Okuyabilen roller: Herkes" in texts(admin)
    create_user(db, "ayse", "ik", "ayse-parola-12")
    assert [d.id for d in list_documents(db, "ik")] == [doc_id]  # what the help promises, true


def test_search_results_are_turkish(db: Database, settings, embedder) -> None:
    _ingest(db, settings, embedder, ["isg"])
    admin = login(new_app(), "admin", ADMIN_PASSWORD)
    admin.switch_page("pages/search.py").run()
    admin.text_input(key="search_question").input("is kazasi bildirimi")
    admin.selectbox(key="search_mode").set_value("weighted")
    admin.selectbox(key="search_role").set_value("isg")
    button(admin, "Ara").click()
    admin.run()
    assert not admin.exception, admin.exception
    metrics = [(m.label, m.value) for m in admin.metric]
    assert ("Mod", "Ağırlıklı") in metrics, metrics
    frame = admin.dataframe[0].value
    cells = " ".join(str(v) for v in frame.to_numpy().ravel())
    assert "None" not in cells and "nan" not in cells.lower()
    assert all("," in str(v) or v == "—" for v in frame["Skor"])  # decimal comma
    assert {"Vektör", "Sözcük"} <= set(frame.columns) and not {"BM25", "Kosinüs"} & set(frame.columns)  # the legs' plain names
    shown = texts(admin)
    assert "weighted" not in shown and "[1] is kazasi · Madde 14 · s. 1" in shown, shown
    # What the chat would do leads (issue 41); the numbers are one click away.
    decision = [re.sub(r"\\(.)", r"\1", a.value) for a in (*admin.success, *admin.info, *admin.warning)]
    assert any("Sohbet bu soru" in d and "(İş sağlığı ve güvenliği rolünün gözüyle)" in d for d in decision), decision
    (technical,) = [e for e in admin.main.expander if e.label == "Teknik ayrıntılar"]
    assert [m.label for m in technical.metric] == ["Mod", "Kanıt skoru", "Eşik", "Süre"]
    assert len(technical.dataframe) == 1 and "Kanıt skoru" not in shown


def test_refused_question_says_no_model_was_called() -> None:
    at = login(new_app(), "admin", ADMIN_PASSWORD)
    at.chat_input(key="chat_input").set_value("Yillik izin kac gundur?").run()
    assert not at.exception, at.exception
    shown = texts(at)
    assert "Model çağrılmadı" in shown, shown
    assert "Üreten: alıntı modu" not in shown


def test_review_queue_shows_quotes_not_markdown_characters(db: Database) -> None:
    asker = create_user(db, "mehmet", "isg", "mehmet-parola-1")
    source = Source(rank=1, chunk_id=1, document_id=1, title="İş Kanunu (4857)", filename="4857.pdf",
                    page_start=9, page_end=9, article="Madde 14", text="...", score=0.5)
    qid = questions.insert_question(db, questions.question_record(
        asker, "Kidem nedir?", answer="> “Kıdem tazminatı ödenir.” [1]", status="answered", generator="extractive",
        llm_called=False, sources=[source]))
    questions.set_feedback(db, qid, "mehmet", -1, "eksik")
    admin = login(new_app(), "admin", ADMIN_PASSWORD)
    admin.switch_page("pages/review.py").run()
    assert not admin.exception, admin.exception
    bodies = [m.value for m in admin.markdown]
    assert any(b.startswith("> “Kıdem tazminatı ödenir") for b in bodies), bodies  # a quote block
    assert not any("\\>" in b for b in bodies)  # not an escaped, literal ">"
    assert "[1] İş Kanunu (4857) · Madde 14 · s. 9" in texts(admin)


def test_title_edit_and_delete_dialog(db: Database, settings, embedder) -> None:
    doc_id = _ingest(db, settings, embedder, ["isg"])
    admin = login(new_app(), "admin", ADMIN_PASSWORD)
    admin.switch_page("pages/documents.py").run()
    admin.text_input(key=f"doc_title_{get_document(db, doc_id, 'admin').public_id}").input("İş Kazası Prosedürü")
    button(admin, "Başlığı kaydet").click()
    admin.run()
    assert get_document(db, doc_id, "admin").title == "İş Kazası Prosedürü"
    assert "Başlık değiştirildi: “İş Kazası Prosedürü”." in texts(admin)
    assert not [b for b in admin.button if b.label == "Evet, sil"]  # no confirmation before "Sil"
    button(admin, "Sil").click()
    admin.run()
    assert get_document(db, doc_id, "admin") is not None  # asking deletes nothing
    button(admin, "Evet, sil").click()
    admin.run()
    assert not admin.exception, admin.exception
    assert get_document(db, doc_id, "admin") is None
    assert "“İş Kazası Prosedürü” silindi." in texts(admin)


def test_password_changed_message_sits_under_the_password_form() -> None:
    admin = login(new_app(), "admin", ADMIN_PASSWORD)
    admin.switch_page("pages/users.py").run()
    admin.text_input(key="users_reset_cur_admin").input(ADMIN_PASSWORD)
    admin.text_input(key="users_reset_pw_admin").input("yeni-parola-12345")
    admin.text_input(key="users_reset_rep_admin").input("yeni-parola-12345")
    button(admin, "Parolayı değiştir").click()
    admin.run()
    assert not admin.exception, admin.exception
    order = _flat(admin.main)
    changed = next(i for i, e in enumerate(order) if "Parolanız değiştirildi" in str(getattr(e, "value", "")))
    form = next(i for i, e in enumerate(order) if getattr(e, "label", None) == "Parolayı değiştir")
    table = next(i for i, e in enumerate(order) if type(e).__name__ == "Dataframe")
    assert changed > form > table  # in view where the admin clicked, not at the top of the page
