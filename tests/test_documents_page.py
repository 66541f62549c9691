"""The Dokümanlar page lists documents without reading their PDFs.

Each download button gets a callable (Streamlit's deferred download) instead of the file's
bytes, so rendering the page for a user who may read many large documents reads nothing; the
file is read when its button is clicked. The memory this saves is measured, not asserted here
(see the helper's report: ten 45 MB documents).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path

import pytest
from streamlit.runtime.media_file_manager import MediaFileManager
from streamlit.testing.v1 import AppTest

from ragcore.access import create_user
from ragcore.documents import ingest_pdf, stored_path
from ragcore.embed import USEEmbedder
from tests import pdfs
from tests.app_support import REPO, reset_app, set_app_env


@pytest.fixture(scope="module")
def embedder() -> USEEmbedder:
    return USEEmbedder()


@pytest.fixture()
def app_env(db, settings, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    set_app_env(monkeypatch, DATABASE_URL=settings.database_url, DATA_DIR=str(settings.data_dir),
                ADMIN_PASSWORD="yonetici-parola-1")
    reset_app(db)
    yield
    reset_app(db)


def test_rendering_the_documents_page_reads_no_pdf(app_env, db, settings, embedder, monkeypatch) -> None:
    stored = {f"belge-{n}.pdf": pdfs.text_pdf([f"MADDE 1 - (1) Belge {n}: calisanlara egitim verilir."])
              for n in range(3)}
    for name, data in stored.items():
        ingest_pdf(db, settings, embedder, data, filename=name, roles=["personel"])
    create_user(db, "ayse", "personel", "ayse-parola-1")

    reads: list[Path] = []
    read_bytes = Path.read_bytes

    def counting_read_bytes(self: Path) -> bytes:
        if self.parent == settings.uploads_dir:
            reads.append(self)
        return read_bytes(self)

    monkeypatch.setattr(Path, "read_bytes", counting_read_bytes)
    deferred: dict[str, object] = {}  # file name -> the callable a click runs
    add_deferred = MediaFileManager.add_deferred

    def recording_add_deferred(self, data_callable, mimetype, coordinates, file_name=None, **kwargs):
        deferred[file_name] = data_callable
        return add_deferred(self, data_callable, mimetype, coordinates, file_name=file_name, **kwargs)

    monkeypatch.setattr(MediaFileManager, "add_deferred", recording_add_deferred)

    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=120)
    at.run()
    at.text_input(key="login_username").input("ayse")
    at.text_input(key="login_password").input("ayse-parola-1")
    next(b for b in at.button if b.label == "Giriş yap").click()
    at.run()
    at.switch_page("pages/documents.py").run()
    at.run()  # a rerun, as every click on the page causes
    assert not at.exception, at.exception

    assert reads == [], "rendering the page read PDF files"
    buttons = at.get("download_button")
    assert len(buttons) == len(stored) and all(b.proto.deferred_file_id and not b.proto.url for b in buttons)
    # What a click runs: that one document's file, read then.
    assert sorted(deferred) == sorted(stored)
    for name, data in stored.items():
        assert deferred[name]() == data
    assert sorted(reads) == sorted(stored_path(settings, hashlib.sha256(d).hexdigest()) for d in stored.values())


def test_the_card_says_which_pages_are_too_large_to_draw(app_env, db, settings, embedder) -> None:
    """Issue 36: an upload records the pages whose image is drawn smaller (4000 pt) or not at all
    (14400 pt, 5 m); the document's card says so in Turkish before anybody opens a page."""
    ingest_pdf(db, settings, embedder, pdfs.sized_pdf([(595, 842), (4000, 4000), (14400, 14400), (4000, 4000)]),
               filename="pafta.pdf", roles=["personel"])
    ingest_pdf(db, settings, embedder, pdfs.law_pdf(), filename="yonetmelik.pdf", roles=["personel"])
    create_user(db, "ayse", "personel", "ayse-parola-1")
    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=120)
    at.run()
    at.text_input(key="login_username").input("ayse")
    at.text_input(key="login_password").input("ayse-parola-1")
    next(b for b in at.button if b.label == "Giriş yap").click()
    at.run()
    at.switch_page("pages/documents.py").run()
    assert not at.exception, at.exception
    captions = [c.value.replace("\\", "") for c in at.caption]  # the card escapes Markdown
    assert "2 sayfa çok büyük (s. 2, 4): sayfa görüntüsü küçültülerek gösterilir." in captions, captions
    assert ("1 sayfa görüntü olarak gösterilemeyecek kadar büyük (s. 3): o sayfanın metnini ya da tek sayfalık "
            "PDF'ini açın.") in captions, captions
    assert sum("büyük" in c for c in captions) == 2  # the regulation's card says nothing of the kind
