"""AppTest coverage for issue 37 in the chat: every question is asked in a saved conversation, a
follow-up shows what was understood and can be corrected, the sidebar lists, reopens (also from
the address, as after a reload), renames and deletes (confirmed), and the open conversation is
exported as Markdown and PDF, with the missing-font refusal in Turkish."""

from __future__ import annotations

import re

import pytest

from ragcore.access import users
from ragcore.conversations import (
    METHOD_NONE,
    UNDERSTOOD,
    get_conversation,
    list_conversations,
)
from ragcore.conversations.export import NO_FONT
from ragcore.documents import ingest_pdf
from ragcore.embed import USEEmbedder
from ragcore.store import Database
from tests import pdfs
from tests.test_app import (
    ADMIN_PASSWORD,
    app_env,  # noqa: F401 (the fixture, used below)
    login,
    new_app,
    shown,
)
from ui.chat import CONVERSATION, FIX_SUBMIT, HISTORY, REVOKED_NOTICE
from ui.conversations import DELETED, PDF_FILE, QUERY_KEY, RENAMED

pytestmark = pytest.mark.usefixtures("app_env")

PAGES = ["Madde 14 - Isveren is kazasini uc is gunu icinde Sosyal Guvenlik Kurumuna bildirir.",
         "Madde 15 - Calisanlarin saglik gozetimi isveren tarafindan yaptirilir."]
FIRST = "Isveren is kazasini hangi kuruma bildirir?"
FOLLOW_UP = "Peki kac gun icinde?"


@pytest.fixture(scope="module")
def embedder() -> USEEmbedder:
    return USEEmbedder()


@pytest.fixture()
def document(db: Database, settings, embedder) -> int:
    return ingest_pdf(db, settings, embedder, pdfs.text_pdf(PAGES), filename="is-kazasi.pdf", roles=["isg"],
                      title="Is Kazasi Talimati").document_id


def _plain(text: str) -> str:
    return re.sub(r"\\(.)", r"\1", text)


def _ask(at, question: str):
    at.chat_input(key="chat_input").set_value(question).run()
    assert not at.exception, at.exception
    return at


def _sidebar_button(at, label: str):
    matches = [b for b in at.sidebar.button if _plain(b.label) == label]
    assert matches, f"no sidebar button {label!r}; have {[_plain(b.label) for b in at.sidebar.button]}"
    return matches[0]


def _understood(at) -> list[str]:
    return [c for c in shown(at.caption) if c.startswith(UNDERSTOOD)]


def _two_turns(db: Database, settings, username: str, password: str):
    at = login(new_app(), username, password)
    _ask(_ask(at, FIRST), FOLLOW_UP)
    (conversation,) = list_conversations(db, settings, users.get_user(db, username))
    return at, conversation


def test_a_question_and_its_follow_up_are_saved_in_one_conversation(db: Database, settings, document) -> None:
    at, conversation = _two_turns(db, settings, "admin", ADMIN_PASSWORD)
    assert conversation.title == FIRST and conversation.turn_count == 2
    assert at.session_state[CONVERSATION] == conversation.id and at.query_params[QUERY_KEY] == conversation.id
    (line,) = _understood(at)  # the follow-up, not the first question, was rewritten
    stored = get_conversation(db, settings, users.get_user(db, "admin"), conversation.id)
    assert stored.turns[1].rewritten and line == stored.turns[1].shown, (line, stored.turns[1])
    assert "kazasini" in line and "Madde 14" not in line, line  # the first question's words carried, no article
    assert _sidebar_button(at, FIRST).proto.type == "primary"  # listed, and marked as the open one
    assert [t.question for t in at.session_state[HISTORY]] == [FIRST, FOLLOW_UP]


def test_the_address_reopens_the_conversation_with_its_answers_and_sources(db: Database, settings, document) -> None:
    at, conversation = _two_turns(db, settings, "admin", ADMIN_PASSWORD)
    answers = [t.text for t in at.session_state[HISTORY]]
    again = new_app()  # a reload: a new session, the address keeps ?sohbet=…
    again.query_params[QUERY_KEY] = conversation.id
    login(again, "admin", ADMIN_PASSWORD)
    turns = again.session_state[HISTORY]
    assert [t.question for t in turns] == [FIRST, FOLLOW_UP] and [t.text for t in turns] == answers
    assert again.session_state[CONVERSATION] == conversation.id
    assert len(_understood(again)) == 1
    labels = [_plain(e.label) for e in again.expander]
    assert "[1] Is Kazasi Talimati · Madde 14 · s. 1" in labels, labels  # the cited source, its passage inside
    (source,) = [e for e in again.expander if _plain(e.label) == "[1] Is Kazasi Talimati · Madde 14 · s. 1"][:1]
    assert any("Sosyal Guvenlik Kurumuna" in _plain(m.value) for m in source.markdown)
    assert not any("benzerlik skoru" in c for c in shown(source.caption))  # no score is stored


def test_a_click_in_the_list_reopens_and_yeni_sohbet_starts_afresh(db: Database, settings, document) -> None:
    at, conversation = _two_turns(db, settings, "admin", ADMIN_PASSWORD)
    _sidebar_button(at, "Yeni sohbet").click().run()
    assert at.session_state[HISTORY] == [] and at.session_state[CONVERSATION] is None
    assert QUERY_KEY not in at.query_params
    _ask(at, "Saglik gozetimini kim yaptirir?")
    assert len(list_conversations(db, settings, users.get_user(db, "admin"))) == 2  # a second conversation
    _sidebar_button(at, FIRST).click().run()
    assert [t.question for t in at.session_state[HISTORY]] == [FIRST, FOLLOW_UP]
    assert at.query_params[QUERY_KEY] == conversation.id


def test_a_correction_is_asked_as_written(db: Database, settings, document) -> None:
    at, conversation = _two_turns(db, settings, "admin", ADMIN_PASSWORD)
    corrected = "Isveren is kazasini kac is gunu icinde bildirir?"
    (area,) = [t for t in at.text_area if t.key and t.key.endswith("_fix_text")]
    area.input(corrected)
    [b for b in at.button if b.label == FIX_SUBMIT][0].click().run()
    assert not at.exception, at.exception
    stored = get_conversation(db, settings, users.get_user(db, "admin"), conversation.id)
    assert len(stored.turns) == 3
    assert stored.turns[2].question == corrected and stored.turns[2].resolved_question == corrected
    assert stored.turns[2].method == METHOD_NONE  # not rewritten a second time
    assert at.session_state[HISTORY][-1].question == corrected


def test_rename_and_a_confirmed_delete(db: Database, settings, document) -> None:
    at, conversation = _two_turns(db, settings, "admin", ADMIN_PASSWORD)
    hostile = "**kalın** [bağlantı](http://kötü) :red[renk]"
    at.text_input(key=f"conv_title_{conversation.id}").input(hostile)
    [b for b in at.sidebar.button if b.label == "Kaydet"][0].click().run()
    assert RENAMED in shown(at.sidebar.success)
    titled = _sidebar_button(at, hostile)
    assert "**kalın**" not in titled.label and "](http" not in titled.label  # escaped, shown literally
    _sidebar_button(at, "Sohbeti sil").click().run()
    assert list_conversations(db, settings, users.get_user(db, "admin"))  # asked first, nothing deleted yet
    assert any("silinsin mi?" in w for w in shown(at.sidebar.warning))
    _sidebar_button(at, "Vazgeç").click().run()
    assert list_conversations(db, settings, users.get_user(db, "admin"))
    _sidebar_button(at, "Sohbeti sil").click().run()
    _sidebar_button(at, "Evet, sil").click().run()
    assert not at.exception, at.exception
    assert list_conversations(db, settings, users.get_user(db, "admin")) == []
    assert DELETED in shown(at.sidebar.success)
    assert at.session_state[HISTORY] == [] and QUERY_KEY not in at.query_params


def test_somebody_elses_conversation_in_the_address_shows_nothing_of_it(db: Database, settings, document) -> None:
    users.create_user(db, "mehmet", "isg", "mehmet-parola-1")
    _, conversation = _two_turns(db, settings, "mehmet", "mehmet-parola-1")
    other = new_app()
    other.query_params[QUERY_KEY] = conversation.id
    login(other, "admin", ADMIN_PASSWORD)
    assert "Sohbet bulunamadı ya da size ait değil." in shown(other.warning)
    assert other.session_state[HISTORY] == [] and QUERY_KEY not in other.query_params
    assert FIRST not in " ".join(shown(other.markdown) + [b.label for b in other.sidebar.button])


def test_a_reopened_answer_from_a_document_no_longer_readable_is_hidden(db: Database, settings, document) -> None:
    users.create_user(db, "mehmet", "isg", "mehmet-parola-1")
    _, conversation = _two_turns(db, settings, "mehmet", "mehmet-parola-1")
    users.set_role(db, "mehmet", "ik")
    again = new_app()
    again.query_params[QUERY_KEY] = conversation.id
    login(again, "mehmet", "mehmet-parola-1")
    assert all(t.revoked and not t.sources for t in again.session_state[HISTORY])
    assert REVOKED_NOTICE in shown(again.warning)
    assert not any("Sosyal Guvenlik" in m for m in shown(again.markdown))
    assert _understood(again) == []


def test_pdf_export_and_the_missing_font_in_turkish(db: Database, settings, document, monkeypatch) -> None:
    at, conversation = _two_turns(db, settings, "admin", ADMIN_PASSWORD)
    assert [b for b in at.sidebar.get("download_button") if "Markdown" in b.proto.label]
    _sidebar_button(at, "PDF hazırla").click().run()
    assert not at.exception, at.exception
    made = at.session_state[PDF_FILE][2]
    assert made.data.startswith(b"%PDF") and made.filename.endswith(".pdf")
    assert [b for b in at.sidebar.get("download_button") if b.proto.label == "PDF'yi indir"]

    from ragcore.conversations import export

    monkeypatch.setattr(export, "FONT_FILES", {"": "YokSans.ttf", "B": "YokSans-Bold.ttf"})
    _ask(at, "Saglik gozetimini kim yaptirir?")  # a new turn: the PDF made before is out of date
    _sidebar_button(at, "PDF hazırla").click().run()
    assert NO_FONT in shown(at.sidebar.error)
