"""The watched folder (ragcore.jobs.watch): a real folder, real ingest jobs, a real worker."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ragcore import jobs
from ragcore.documents import list_documents, list_versions
from ragcore.embed import make_embedder
from ragcore.jobs import watch
from tests import pdfs


@pytest.fixture(scope="module")
def embedder(pg_url: str):
    from ragcore.core import Settings

    return make_embedder(Settings(database_url=pg_url, embed_backend="use", ollama_base_url="http://127.0.0.1:9"))


@pytest.fixture()
def share(tmp_path: Path) -> Path:
    root = tmp_path / "paylasim"
    root.mkdir()
    return root


@pytest.fixture()
def watching(settings, share):
    return settings.replace(watch_dir=share)


def put(root: Path, relative: str, data: bytes) -> Path:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def work(settings, embedder) -> None:
    """Run every queued job to its end."""
    jobs.run_worker(settings, wait=False, embedder_factory=lambda: embedder)


def stored_by_a_scan(db, settings, embedder) -> jobs.ScanReport:
    """Scan, let a worker store what the scan queued, and scan again to record it."""
    jobs.scan(db, settings)
    work(settings, embedder)
    return jobs.scan(db, settings)


def documents_by_title(db) -> dict[str, tuple[str, ...]]:
    return {doc.title: tuple(doc.allowed_roles) for doc in list_documents(db, "admin")}


def law(words: str) -> bytes:
    return pdfs.text_pdf([f"MADDE 1 - {words} isveren calisanlarin sagligini korur. " * 4])


def test_new_files_take_their_folders_rule_and_are_stored_by_a_worker(db, watching, share, embedder):
    put(share, "Talimatlar/.dayanak.toml", b'roles = ["isg", "uretim"]\n')
    put(share, "Talimatlar/Forklift/forklift.pdf", law("forklift"))
    put(share, "genel.pdf", law("genel"))
    put(share, "notlar.txt", b"not a document")

    first = jobs.scan(db, watching)
    assert sorted(first.queued) == ["Talimatlar/Forklift/forklift.pdf", "genel.pdf"]
    work(watching, embedder)
    second = jobs.scan(db, watching)

    assert sorted(second.stored) == ["Talimatlar/Forklift/forklift.pdf", "genel.pdf"]
    assert documents_by_title(db) == {"forklift": ("isg", "uretim"), "genel": ("admin",)}


def test_an_unchanged_folder_queues_nothing(db, watching, share, embedder):
    put(share, "a.pdf", law("bir"))
    stored_by_a_scan(db, watching, embedder)

    again = jobs.scan(db, watching)

    assert (again.queued, again.stored, again.unchanged) == ([], [], 1)
    assert len(jobs.list_jobs(db, kind=jobs.INGEST)) == 1


def test_a_touched_file_with_the_same_content_is_not_ingested_again(db, watching, share, embedder):
    path = put(share, "a.pdf", law("bir"))
    stored_by_a_scan(db, watching, embedder)
    os.utime(path, ns=(1_000_000_000, 1_000_000_000))

    again = jobs.scan(db, watching)

    assert again.queued == [] and again.unchanged == 1
    assert len(jobs.list_jobs(db, kind=jobs.INGEST)) == 1


def test_a_changed_file_replaces_its_document_once_the_new_content_is_stored(db, watching, share, embedder):
    path = put(share, "talimat.pdf", law("eski"))
    stored_by_a_scan(db, watching, embedder)
    [old] = list_documents(db, "admin")
    path.write_bytes(law("yeni baret zorunludur"))

    changed = jobs.scan(db, watching)
    assert changed.queued == ["talimat.pdf"]
    assert [doc.id for doc in list_documents(db, "admin")] == [old.id]  # the old one answers meanwhile
    work(watching, embedder)
    jobs.scan(db, watching)

    [new] = list_documents(db, "admin")
    assert new.id != old.id and new.sha256 != old.sha256
    assert [(v.version_no, v.is_current) for v in list_versions(db, new.id, "admin")] == [(2, True), (1, False)]


def test_a_removed_file_is_retired_and_kept_and_comes_back_with_its_file(db, watching, share, embedder):
    path = put(share, "gecici.pdf", law("gecici"))
    stored_by_a_scan(db, watching, embedder)
    [doc] = list_documents(db, "admin")
    data = path.read_bytes()
    path.unlink()

    report = jobs.scan(db, watching)

    assert report.retired == ["gecici.pdf"]
    assert list_documents(db, "admin") == []  # no longer answers
    assert [v.is_current for v in list_versions(db, doc.id, "admin")] == [False]  # kept for the audit trail
    assert jobs.scan(db, watching).retired == []  # retired once
    path.write_bytes(data)
    assert jobs.scan(db, watching).stored == ["gecici.pdf"]
    assert [d.id for d in list_documents(db, "admin")] == [doc.id]


def test_a_broken_file_is_reported_and_not_tried_again_until_it_changes(db, watching, share, embedder):
    path = put(share, "bozuk.pdf", pdfs.truncated_pdf())
    jobs.scan(db, watching)
    work(watching, embedder)

    settled = jobs.scan(db, watching)
    again = jobs.scan(db, watching)

    assert list(settled.failed) == ["bozuk.pdf"] and settled.failed["bozuk.pdf"]
    assert again.failed == settled.failed and again.queued == []
    assert len(jobs.list_jobs(db, kind=jobs.INGEST)) == 1
    path.write_bytes(law("onarilmis"))
    assert jobs.scan(db, watching).queued == ["bozuk.pdf"]


def test_a_file_refused_before_its_job_is_reported_with_the_reason(db, watching, share):
    put(share, "bos.pdf", b"")
    put(share, "metin.pdf", b"plain text, not a PDF at all")

    report = jobs.scan(db, watching)

    assert sorted(report.failed) == ["bos.pdf", "metin.pdf"]
    assert "boş" in report.failed["bos.pdf"]
    assert jobs.list_jobs(db, kind=jobs.INGEST) == []


def test_a_rule_file_may_name_a_role_an_admin_created(db, watching, share, embedder):
    """Roles are data (migration 021): a folder's rule names any role of the registry, and a role
    created after a file was refused lets the file in once it changes."""
    from ragcore.access import create_role

    put(share, "Kalite/.dayanak.toml", b'roles = ["kalite", "denetci"]\n')
    put(share, "Kalite/plan.pdf", law("kalite"))
    assert "Bilinmeyen rol: kalite" in jobs.scan(db, watching).failed["Kalite/plan.pdf"]
    create_role(db, "kalite", "Kalite")
    put(share, "Kalite/plan.pdf", law("kalite plani"))
    assert jobs.scan(db, watching).queued == ["Kalite/plan.pdf"]
    work(watching, embedder)
    jobs.scan(db, watching)
    assert sorted(documents_by_title(db)["plan"]) == ["denetci", "kalite"]


def test_a_broken_rule_file_refuses_its_folder_instead_of_guessing_roles(db, watching, share):
    put(share, "IK/.dayanak.toml", b"roles = isg\n")  # not TOML: a bare word
    put(share, "IK/bordro.pdf", law("bordro"))
    put(share, "IK/Alt/izin.pdf", law("izin"))
    put(share, "Bos/.dayanak.toml", b"collections = [\"Talimatlar\"]\n")
    put(share, "Bos/x.pdf", law("x"))
    put(share, "Yanlis/.dayanak.toml", b'roles = ["isg"]\nrol = ["ik"]\n')
    put(share, "Yanlis/y.pdf", law("y"))
    put(share, "Bilinmeyen/.dayanak.toml", b'roles = ["muhasebe"]\n')
    put(share, "Bilinmeyen/z.pdf", law("z"))

    report = jobs.scan(db, watching)

    assert report.queued == []
    assert "IK/.dayanak.toml" in report.failed["IK/bordro.pdf"]
    assert "IK/.dayanak.toml" in report.failed["IK/Alt/izin.pdf"]
    assert "rol yok" in report.failed["Bos/x.pdf"]
    assert "bilinmeyen alan" in report.failed["Yanlis/y.pdf"]
    assert "Bilinmeyen rol" in report.failed["Bilinmeyen/z.pdf"]


def test_a_walk_cut_by_the_file_limit_retires_nothing(db, watching, share, embedder):
    for name in ("a.pdf", "b.pdf", "c.pdf"):
        put(share, name, law(name))
    stored_by_a_scan(db, watching, embedder)

    cut = jobs.scan(db, watching.replace(watch_max_files=1))

    assert cut.truncated and cut.seen == 1 and cut.retired == []
    assert len(list_documents(db, "admin")) == 3


def test_links_and_hidden_files_are_not_followed(db, watching, share, tmp_path):
    outside = put(tmp_path, "disarida/gizli.pdf", law("gizli"))
    (share / "baglanti.pdf").symlink_to(outside)
    (share / "klasor").symlink_to(outside.parent, target_is_directory=True)
    put(share, ".gizli.pdf", law("gizli"))
    put(share, ".git/x.pdf", law("gizli"))

    assert jobs.scan(db, watching).seen == 0


def test_a_missing_folder_fails_the_scan_with_a_turkish_reason(db, watching, share):
    share.rmdir()
    with pytest.raises(jobs.WatchError, match="İzlenen klasör bulunamadı"):
        jobs.scan(db, watching)


def test_one_scan_is_queued_at_a_time_and_none_without_a_folder(db, settings, watching, share, embedder):
    assert jobs.queue_scan(db, settings) is None
    first = jobs.queue_scan(db, watching)
    assert first is not None and first.kind == watch.WATCH
    assert jobs.queue_scan(db, watching) is None
    put(share, "a.pdf", law("bir"))
    work(watching, embedder)  # the scan queues the upload, the same worker stores it

    assert jobs.get_job(db, first.id).status == jobs.SUCCEEDED
    assert [doc.title for doc in list_documents(db, "admin")] == ["a"]


def test_the_documents_page_lists_failed_files_first_with_their_reason(db, settings, share, monkeypatch):
    from streamlit.testing.v1 import AppTest

    from tests.app_support import REPO, reset_app, set_app_env

    put(share, "bozuk.pdf", b"plain text, not a PDF at all")
    jobs.scan(db, settings.replace(watch_dir=share))
    set_app_env(monkeypatch, DATABASE_URL=settings.database_url, DATA_DIR=str(settings.data_dir),
                ADMIN_PASSWORD="yonetici-parola-1", WATCH_DIR=str(share), WORKER_IN_APP="false")
    reset_app(db)
    try:
        at = AppTest.from_file(str(REPO / "app.py"), default_timeout=120)
        at.run()
        at.text_input(key="login_username").input("admin")
        at.text_input(key="login_password").input("yonetici-parola-1")
        next(b for b in at.button if b.label == "Giriş yap").click()
        at.run()
        at.switch_page("pages/documents.py").run()
        assert not at.exception, at.exception

        [section] = [e for e in at.expander if e.label.startswith("İzlenen klasör")]
        assert section.label.endswith("1 hatalı dosya")
        frame = section.dataframe[0].value
        assert list(frame["Dosya"]) == ["bozuk.pdf"] and list(frame["Durum"]) == ["hatalı"]
        assert "PDF" in frame["Sebep"][0] or "Word" in frame["Sebep"][0]
    finally:
        reset_app(db)
