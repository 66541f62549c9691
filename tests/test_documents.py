"""Role-scoped document access, role changes, deletion with exact lexical statistics."""

from __future__ import annotations

import re

import pytest

from ragcore.core import Settings, disk_space, format_integer
from ragcore.documents import (
    DocumentNotFound,
    IngestError,
    delete_document,
    document_chunks,
    document_file,
    find_document,
    get_document,
    ingest_pdf,
    list_documents,
    reembed_all,
    set_document_roles,
    stored_path,
)
from ragcore.embed import USEEmbedder
from tests import pdfs
from tests.test_ingest import check_lexical_index, state


@pytest.fixture(scope="module")
def embedder() -> USEEmbedder:
    return USEEmbedder()


@pytest.fixture()
def two_docs(db, settings, embedder):
    law = ingest_pdf(db, settings, embedder, pdfs.law_pdf(), filename="yonetmelik.pdf", roles=["isg"],
                     title="İSG yönetmeliği")
    hr = ingest_pdf(db, settings, embedder, pdfs.text_pdf(["Izin proseduru. Yillik izin on dort gundur."]),
                    filename="izin.pdf", roles=["ik", "personel"], title="İzin prosedürü")
    return law.document_id, hr.document_id


def test_listing_is_scoped_by_role(db, two_docs):
    law, hr = two_docs
    assert [d.id for d in list_documents(db, "admin")] == [hr, law]
    assert [d.id for d in list_documents(db, "isg")] == [law]
    assert [d.id for d in list_documents(db, "personel")] == [hr]
    assert list_documents(db, "uretim") == []
    listed = list_documents(db, "isg")[0]
    assert listed.chunk_count > 0 and listed.page_count == 2 and listed.allowed_roles == ("isg",)


def test_get_chunks_and_file_respect_the_role(db, settings, two_docs):
    law, _ = two_docs
    assert get_document(db, law, "personel") is None
    doc = get_document(db, law, "isg")
    assert doc is not None and doc.title == "İSG yönetmeliği"
    chunks = document_chunks(db, law, "isg")
    assert [c.ordinal for c in chunks] == list(range(len(chunks)))
    assert any(c.article == "Madde 1" for c in chunks)
    with pytest.raises(DocumentNotFound, match="bulunamadı") as refused:
        document_chunks(db, law, "personel")
    assert str(law) not in str(refused.value)  # the key is a counter: no message shows it
    assert find_document(db, doc.public_id, "isg") == doc
    assert find_document(db, doc.public_id, "personel") is None
    assert find_document(db, str(law), "admin") is None  # a key is no public id
    assert document_file(settings, doc, "isg") == stored_path(settings, doc.sha256)
    assert document_file(settings, doc, "admin") is not None
    assert document_file(settings, doc, "personel") is None


def test_changing_roles_reaches_the_chunks(db, two_docs):
    law, _ = two_docs
    doc = set_document_roles(db, law, ["uretim", "personel"])
    assert doc.allowed_roles == ("uretim", "personel")
    with db.connection() as conn:
        roles = conn.execute("SELECT DISTINCT allowed_roles FROM chunks WHERE document_id = %s", (law,)).fetchall()
    assert roles == [(["uretim", "personel"],)]
    assert get_document(db, law, "isg") is None
    with pytest.raises(IngestError, match="En az bir rol"):
        set_document_roles(db, law, [])
    with pytest.raises(DocumentNotFound):
        set_document_roles(db, 9999, ["isg"])


def test_delete_removes_rows_file_and_keeps_lexicon_exact(db, settings, embedder, two_docs):
    law, hr = two_docs
    before_hr_only = None
    doc = get_document(db, law, "admin")
    deleted = delete_document(db, settings, law)
    assert deleted.id == law
    assert not stored_path(settings, doc.sha256).exists()
    with db.connection() as conn:
        assert conn.execute("SELECT count(*) FROM chunks WHERE document_id = %s", (law,)).fetchone()[0] == 0
    check_lexical_index(db)
    before_hr_only = state(db, settings)
    delete_document(db, settings, hr)
    after = state(db, settings)
    assert after["counts"] == {"documents": 0, "chunks": 0, "postings": 0, "chunk_windows": 0}
    assert after["lexicon"] == {} and after["stats"] == (0, 0) and after["files"] == []
    assert before_hr_only["counts"]["documents"] == 1
    with pytest.raises(DocumentNotFound):
        delete_document(db, settings, law)


def test_reembed_replaces_every_vector_in_one_go(db, embedder, two_docs):
    with db.connection() as conn:
        total = conn.execute("SELECT count(*) FROM chunks").fetchone()[0]
        conn.execute("UPDATE chunks SET embedding = NULL")
    assert reembed_all(db, embedder) == total
    with db.connection() as conn:
        missing = conn.execute("SELECT count(*) FROM chunks WHERE embedding IS NULL").fetchone()[0]
        model = conn.execute("SELECT model, dim FROM embedding_index").fetchone()
    assert missing == 0 and model == ("use-multilingual-v3", 512)


# ----------------------------------------------------------------------------- free disk space (MIN_FREE_DISK_MB)

LOW_DISK = re.compile(r"^Diskte yer az: veri klasöründe [\d.]+ MB boş, yükleme için en az [\d.]+ MB gerekir\. "
                      r"Yer açın ya da MIN_FREE_DISK_MB ayarını düşürün\.$")


def above_free_space(settings) -> Settings:
    """The settings with a floor a terabyte above what DATA_DIR's disk has free: every upload is refused."""
    return settings.replace(min_free_disk_mb=disk_space("data", settings.data_dir).free_mb + 1024 * 1024)


def test_below_the_free_disk_floor_an_upload_is_refused_before_anything_is_written(db, settings, embedder):
    """The library's entry point (the CLI and every job end there) and the queue's (the app, the API,
    `ingest --background`) refuse alike; no row, no stored or staged file."""
    from ragcore import jobs
    from ragcore.documents import DiskSpaceLow

    full = above_free_space(settings)
    with pytest.raises(DiskSpaceLow) as refused:
        ingest_pdf(db, full, embedder, pdfs.law_pdf(), filename="yonetmelik.pdf", roles=["isg"])
    assert LOW_DISK.match(str(refused.value)), str(refused.value)
    assert f"en az {format_integer(full.min_free_disk_mb)} MB gerekir" in str(refused.value)
    with pytest.raises(jobs.JobError) as queued:
        jobs.submit_ingest(db, full, pdfs.law_pdf(), filename="yonetmelik.pdf", roles=["isg"])
    assert LOW_DISK.match(str(queued.value))
    after = state(db, settings)
    assert after["counts"]["documents"] == 0 and after["files"] == []
    assert jobs.list_jobs(db) == [] and not settings.incoming_dir.exists()

    assert ingest_pdf(db, settings.replace(min_free_disk_mb=0), embedder, pdfs.law_pdf(), filename="yonetmelik.pdf",
                      roles=["isg"]).chunks > 0  # 0 turns the check off


def test_the_apps_upload_handler_says_the_disk_is_low_in_turkish(db, settings):
    from ragcore.access import create_user
    from ui import upload
    from ui.context import AppContext

    admin = create_user(db, "yonetici", "admin", "yonetici-parola")
    outcome = upload.upload_document(AppContext(settings=above_free_space(settings), db=db), admin, "yonetmelik.pdf",
                                     pdfs.law_pdf(), ["isg"])
    assert not outcome.ok and LOW_DISK.match(outcome.message), outcome.message
    assert state(db, settings)["counts"]["documents"] == 0 and not settings.incoming_dir.exists()
