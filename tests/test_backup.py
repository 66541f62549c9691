"""Backup and restore (ragcore.ops.backup): a real dump of the test database restored into a
second, empty embedded server, and what a broken backup or a full database is told."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragcore import store as dbmod
from ragcore.access import users
from ragcore.core import Settings
from ragcore.documents import ingest_pdf, list_documents, stored_path
from ragcore.embed import USEEmbedder
from ragcore.ops import BackupError, backup, read_manifest, restore
from ragcore.retrieval import search
from tests import pdfs

QUESTION = "İşveren risk değerlendirmesi yapmakla yükümlü müdür?"


@pytest.fixture(scope="module")
def embedder() -> USEEmbedder:
    return USEEmbedder()


@pytest.fixture()
def stocked(db, settings, embedder):
    """The test database with a law and a user, as a company's would be."""
    ingest_pdf(db, settings, embedder, pdfs.law_pdf(), filename="6331.pdf", roles=["isg"])
    users.create_user(db, "mehmet", "isg", "mehmet-parola-1")
    [doc] = list_documents(db, "admin")
    return doc


@pytest.fixture()
def empty_server(server_root: Path):
    """A second embedded server, empty, with its own DATA_DIR."""
    data_dir = server_root / "data"
    url = dbmod.embedded_url(data_dir)
    target = Settings(database_url=url, data_dir=data_dir, embed_backend="use", ollama_base_url="http://127.0.0.1:9")
    database = dbmod.Database(url, "public")
    yield target, database
    database.close()
    dbmod.stop_embedded(data_dir)


def test_a_backup_restored_into_an_empty_server_answers_as_the_original(db, settings, stocked, embedder, tmp_path,
                                                                         empty_server):
    result = backup(settings, db, tmp_path / "yedekler")
    target, restored_db = empty_server

    restore(target, restored_db, result.folder)

    before = [(d.title, d.sha256, d.allowed_roles) for d in list_documents(db, "admin")]
    after = [(d.title, d.sha256, d.allowed_roles) for d in list_documents(restored_db, "admin")]
    assert after == before
    assert users.authenticate(restored_db, "mehmet", "mehmet-parola-1") is not None
    assert stored_path(target, stocked.sha256, "pdf").read_bytes() == stored_path(settings, stocked.sha256, "pdf").read_bytes()
    original = [s.text for s in search(db, embedder, QUESTION, "isg", k=3, settings=settings)]
    assert [s.text for s in search(restored_db, embedder, QUESTION, "isg", k=3, settings=target)] == original
    assert dbmod.migration_status(restored_db)[1] == []


def test_a_backup_folder_is_whole_or_absent(db, settings, stocked, tmp_path):
    target = tmp_path / "yedekler"
    result = backup(settings, db, target)

    manifest = read_manifest(result.folder)
    assert sorted(p.name for p in result.folder.iterdir()) == ["database.dump", "files.tar.gz", "manifest.json"]
    assert manifest["migrations"] == list(result.migrations) and result.database_bytes > 0
    assert (result.folder / "files.tar.gz").stat().st_mode & 0o077 == 0  # it holds the secrets

    unreachable = settings.replace(database_url="postgresql://nobody@127.0.0.1:9/none?connect_timeout=2")
    with pytest.raises(BackupError, match="Veritabanı yedeklenemedi"):
        backup(unreachable, db, target)
    assert [p.name for p in target.iterdir()] == [result.folder.name]  # no half-written folder


def test_a_damaged_backup_is_refused_before_anything_is_restored(db, settings, stocked, tmp_path, empty_server):
    result = backup(settings, db, tmp_path / "yedekler")
    with (result.folder / "database.dump").open("r+b") as dump:
        dump.seek(100)
        dump.write(b"\0" * 16)
    target, restored_db = empty_server

    with pytest.raises(BackupError, match="Yedek bozuk"):
        restore(target, restored_db, result.folder)
    assert dbmod.migration_status(restored_db)[0] == []  # nothing was written


def test_a_database_that_holds_dayanak_is_overwritten_only_when_asked(db, settings, stocked, tmp_path,
                                                                       empty_server):
    result = backup(settings, db, tmp_path / "yedekler")
    target, restored_db = empty_server
    restore(target, restored_db, result.folder)
    users.create_user(restored_db, "sonradan", "ik", "sonradan-parola-1")

    with pytest.raises(BackupError, match="--replace"):
        restore(target, restored_db, result.folder)
    assert users.get_user(restored_db, "sonradan") is not None

    restore(target, restored_db, result.folder, replace=True)
    assert users.get_user(restored_db, "sonradan") is None
    assert [d.title for d in list_documents(restored_db, "admin")] == [stocked.title]


def test_a_backup_of_a_newer_version_is_refused(db, settings, stocked, tmp_path, empty_server):
    result = backup(settings, db, tmp_path / "yedekler")
    manifest_path = result.folder / "manifest.json"
    manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    manifest["migrations"].append(999)
    manifest_path.write_text(json.dumps(manifest), encoding="utf-8")
    target, restored_db = empty_server

    with pytest.raises(BackupError, match="daha yeni bir sürümünden"):
        restore(target, restored_db, result.folder)


def test_the_command_line_backs_up_and_refuses_a_restore_over_live_data(db, settings, stocked, tmp_path, monkeypatch,
                                                                        capsys):
    from ragcore.cli import main

    monkeypatch.chdir(tmp_path)  # no stray .env
    for name, value in {"DATABASE_URL": settings.database_url, "DATA_DIR": str(settings.data_dir),
                        "EMBED_BACKEND": "use", "OLLAMA_BASE_URL": "http://127.0.0.1:9", "LOG_LEVEL": "WARNING"}.items():
        monkeypatch.setenv(name, value)

    assert main(["backup", str(tmp_path / "yedekler"), "--json"]) == 0
    folder = Path(json.loads(capsys.readouterr().out)["folder"])
    assert main(["restore", str(folder)]) == 1
    assert "--replace" in capsys.readouterr().err
