"""AppTest coverage for collections (issue 39.2) in the app: the chat's "Nerede arayayım?" picker
lists only what the user's roles read and restricts the question to it; the admin creates,
renames, fills and deletes collections on the Dokümanlar page, in Turkish."""

from __future__ import annotations

import pytest

from ragcore.access import create_user
from ragcore.documents import (
    create_collection,
    document_collection_ids,
    find_collection,
    ingest_pdf,
    list_collections,
    set_collection_members,
)
from ragcore.embed import USEEmbedder
from ragcore.store import Database
from tests import pdfs
from tests.test_app import ADMIN_PASSWORD, app_env, login, new_app, shown  # noqa: F401 (app_env: the fixture)
from ui.chat import EVERYWHERE, HISTORY, SCOPE, SCOPE_LABEL

pytestmark = pytest.mark.usefixtures("app_env")

QUESTION = "Forklift operatoru hangi egitimi almalidir?"


@pytest.fixture(scope="module")
def embedder() -> USEEmbedder:
    return USEEmbedder()


@pytest.fixture()
def library(db: Database, settings, embedder) -> dict[str, int]:
    def add(name: str, text: str, roles: list[str]) -> int:
        return ingest_pdf(db, settings, embedder, pdfs.text_pdf([text]), filename=f"{name}.pdf", roles=roles,
                          title=name).document_id

    return {
        "Forklift Talimati": add("Forklift Talimati", "Madde 1 - Forklift bakimi haftalik yapilir.", ["isg"]),
        "Forklift Egitimi": add("Forklift Egitimi", "Madde 1 - Forklift operatoru forklift egitimi almalidir. "
                                "Forklift operatoru egitimi her yil yenilenir.", ["isg"]),
        "Gizli Ucretler": add("Gizli Ucretler", "Madde 1 - Forklift operatoru egitimi alana prim odenir.", ["ik"]),
    }


def _picker(at):
    (box,) = [s for s in at.selectbox if s.label == SCOPE_LABEL]
    return box


def test_the_picker_lists_only_what_the_roles_read_and_restricts_the_question(db: Database, library) -> None:
    talimatlar = create_collection(db, "Talimatlar")
    set_collection_members(db, talimatlar.public_id, [library["Forklift Talimati"], library["Gizli Ucretler"]])
    hidden = create_collection(db, "Ucretler")
    set_collection_members(db, hidden.public_id, [library["Gizli Ucretler"]])
    create_user(db, "mehmet", "isg", "mehmet-parola-1")
    at = login(new_app(), "mehmet", "mehmet-parola-1")
    labels = list(_picker(at).options)
    assert labels == [EVERYWHERE, "Koleksiyon: Talimatlar (1 belge)", "Belge: Forklift Egitimi",
                      "Belge: Forklift Talimati"], labels  # no "Ucretler", no ik document, a count of 1
    at.session_state[SCOPE] = f"k:{talimatlar.public_id}"  # what choosing the second line sets
    at.run()
    at.chat_input(key="chat_input").set_value(QUESTION).run()
    assert not at.exception, at.exception
    (turn,) = at.session_state[HISTORY]
    assert turn.sources and {s.document_id for s in turn.sources} == {library["Forklift Talimati"]}
    assert turn.scope == "Talimatlar" and "Yalnızca şurada arandı: Talimatlar" in shown(at.caption)
    assert at.session_state[SCOPE] == f"k:{talimatlar.public_id}"  # kept for the follow-up
    at.session_state[SCOPE] = ""
    at.run()
    at.chat_input(key="chat_input").set_value(QUESTION).run()
    everywhere = at.session_state[HISTORY][-1]
    assert everywhere.scope == "" and library["Forklift Egitimi"] in {s.document_id for s in everywhere.sources}


def test_admin_creates_fills_renames_and_deletes_a_collection(db: Database, library) -> None:
    at = login(new_app(), "admin", ADMIN_PASSWORD)
    at.switch_page("pages/documents.py").run()
    assert not at.exception, at.exception
    at.text_input(key="col_new_name").input("Talimatlar")
    [b for b in at.button if b.label == "Koleksiyon oluştur"][0].click().run()
    assert not at.exception, at.exception
    (made,) = list_collections(db, ("admin",))
    assert made.name == "Talimatlar" and made.documents == 0
    at.text_input(key="col_new_name").input("talimatlar")
    [b for b in at.button if b.label == "Koleksiyon oluştur"][0].click().run()
    assert "Bu adda bir koleksiyon zaten var: talimatlar. Başka bir ad seçin." in shown(at.error)
    key = made.public_id
    at.multiselect(key=f"col_docs_{key}").set_value([library["Forklift Talimati"], library["Gizli Ucretler"]])
    at.text_input(key=f"col_name_{key}").input("İş Talimatları")
    at.button(key=f"col_save_{key}").click().run()
    assert not at.exception, at.exception
    saved = find_collection(db, key, ("admin",))
    assert (saved.name, saved.documents) == ("İş Talimatları", 2)
    assert document_collection_ids(db, library["Forklift Talimati"]) == [key]
    at.button(key=f"col_delete_{key}").click().run()
    assert not at.exception, at.exception
    assert list_collections(db, ("admin",)) == []
    assert len([d for d in library.values()]) == 3  # the documents stay
    with db.connection() as conn:
        assert conn.execute("SELECT count(*) FROM documents").fetchone()[0] == 3
