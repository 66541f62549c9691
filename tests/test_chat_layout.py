"""AppTest coverage for issue 22, the chat's answer layout: a quoted answer leads with its source
and cites [1] first, the sources under it keep that numbering, and the closest passages have a
box of their own that cannot be read as an answer."""

from __future__ import annotations

import re

import pytest

from ragcore.answer.service import closest_passages_text
from ragcore.core import CLOSEST_LEAD, OUTCOME_CLOSEST, STATUS_NEEDS_REVIEW, Source
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
from ui.chat import HISTORY, NEAREST_CAPTION, UNUSED_SOURCES, Turn
from ui.markdown import MARK

pytestmark = pytest.mark.usefixtures("app_env")

PAGES = ["Madde 14 - Isveren is kazasini uc is gunu icinde Sosyal Guvenlik Kurumuna bildirir.",
         "Madde 15 - Calisanlarin saglik gozetimi isveren tarafindan yaptirilir."]


@pytest.fixture(scope="module")
def embedder() -> USEEmbedder:
    return USEEmbedder()


def _ingest(db: Database, settings, embedder) -> int:
    return ingest_pdf(db, settings, embedder, pdfs.text_pdf(PAGES), filename="is-kazasi.pdf", roles=["isg"],
                      title="Is Kazasi Talimati").document_id


def _plain(text: str) -> str:
    return re.sub(r"\\(.)", r"\1", text)


def test_quoted_answer_leads_with_its_source_and_cites_one_first(db: Database, settings, embedder) -> None:
    _ingest(db, settings, embedder)
    at = login(new_app(), "admin", ADMIN_PASSWORD)
    at.chat_input(key="chat_input").set_value("Isveren is kazasini hangi kuruma bildirir?").run()
    assert not at.exception, at.exception
    answer = next(_plain(m.value) for m in at.markdown if "göre:" in _plain(m.value))
    lead, blank, first, *_ = answer.split("\n")
    assert lead.startswith("Is Kazasi Talimati, Madde 14") and lead.rstrip().endswith("göre:"), answer
    assert first.startswith("> “") and "Sosyal Guvenlik Kurumuna" in first and first.endswith("[1]"), answer
    labels = [_plain(e.label) for e in at.expander]
    assert labels[0] == "[1] Is Kazasi Talimati · Madde 14 · s. 1", labels  # the list keeps the answer's numbers
    (turn,) = at.session_state[HISTORY]
    assert [s.rank for s in turn.sources] == list(range(1, len(turn.sources) + 1)) and turn.cited[0] == 1
    assert turn.cited == (1,) and len(turn.sources) == 2
    captions = shown(at.caption)  # the context the answer did not use is listed apart, after the cited source
    assert captions.index("Kaynaklar") < captions.index(UNUSED_SOURCES), captions
    assert labels[1] == "[2] Is Kazasi Talimati · Madde 15 · s. 2", labels


def test_closest_passages_have_a_box_of_their_own(db: Database, settings, embedder) -> None:
    doc_id = _ingest(db, settings, embedder)
    with db.connection() as conn:
        chunk_id = conn.execute("SELECT id FROM chunks WHERE document_id = %s ORDER BY ordinal", (doc_id,)).fetchone()[0]
    source = Source(1, chunk_id, doc_id, "Is Kazasi Talimati", "is-kazasi.pdf", 1, 1, "Madde 14", 0.4, PAGES[0])
    at = login(new_app(), "admin", ADMIN_PASSWORD)
    at.session_state[HISTORY] = [Turn(question="Kaza olursa ne yapilir?", text=closest_passages_text([source]),
                                      status=STATUS_NEEDS_REVIEW, outcome=OUTCOME_CLOSEST, sources=(source,),
                                      cited=(1,))]
    at.run()
    assert not at.exception, at.exception
    (box,) = [w for w in shown(at.warning) if CLOSEST_LEAD in w]
    assert "Yakın parça 1: Is Kazasi Talimati, Madde 14, s. 1 [1]" in box and "Bu bir cevap değil" in box
    bodies = [_plain(m.value) for m in at.markdown]
    assert not any("göre:" in b or b.startswith(">") or "Yakın parça" in b for b in bodies), bodies  # no answer look
    assert "[1] Is Kazasi Talimati · Madde 14 · s. 1" in [_plain(e.label) for e in at.expander]


def test_the_closest_passages_are_open_with_their_nearest_sentence_marked(db: Database, settings, embedder) -> None:
    doc_id = _ingest(db, settings, embedder)
    with db.connection() as conn:
        chunk_id = conn.execute("SELECT id FROM chunks WHERE document_id = %s ORDER BY ordinal", (doc_id,)).fetchone()[0]
    source = Source(1, chunk_id, doc_id, "Is Kazasi Talimati", "is-kazasi.pdf", 1, 1, "Madde 14", 0.4, PAGES[0])
    nearest = "Isveren is kazasini uc is gunu icinde Sosyal Guvenlik Kurumuna bildirir."
    at = login(new_app(), "admin", ADMIN_PASSWORD)
    at.session_state[HISTORY] = [Turn(question="Kaza olursa ne yapilir?", text=closest_passages_text([source]),
                                      status=STATUS_NEEDS_REVIEW, outcome=OUTCOME_CLOSEST, sources=(source,),
                                      cited=(1,), nearest=(nearest,))]
    at.run()
    assert not at.exception, at.exception
    (expander,) = [e for e in at.expander if _plain(e.label) == "[1] Is Kazasi Talimati · Madde 14 · s. 1"]
    assert expander.proto.expanded  # what this outcome has to show is open
    marked = [_plain(m.value) for m in expander.markdown if MARK[0] in _plain(m.value)]
    assert marked and _plain(MARK[0]) + nearest + MARK[1] in marked[0], marked
    assert NEAREST_CAPTION in shown(at.caption)
    (box,) = [w for w in shown(at.warning) if CLOSEST_LEAD in w]
    assert nearest not in box  # marked in the passage, never put in the box as if it were the answer
