"""Document versions where users meet them (issue 39.1): the REST API, the command line, the upload
handler's "Yeni sürüm olarak yükle" offer, and a conversation export naming the cited version."""

from __future__ import annotations

import json

import pytest

from ragcore import jobs
from ragcore.access import create_user
from ragcore.core import format_date
from ragcore.documents import find_document, get_document, ingest_file, list_documents
from ragcore.embed import USEEmbedder
from tests import pdfs
from tests.api_support import api_app, bearer, error_code, person

V1 = ("KALIP DEGISTIRME TALIMATI\nKalip degistirilmeden once pres enerjisi kesilir ve kilitlenir. "
      "Kalip en az iki kisi ile tasinir.")
V2 = ("KALIP DEGISTIRME TALIMATI\nKalip degistirilmeden once pres enerjisi kesilir, kilitlenir ve etiketlenir. "
      "Kalip vinc ile tasinir; elle tasima yasaktir.")


@pytest.fixture(scope="module")
def model() -> USEEmbedder:
    return USEEmbedder()


def _first(db, settings, model, roles=("uretim",)):
    return ingest_file(db, settings, model, pdfs.text_pdf([V1]), filename="kalip.pdf", roles=list(roles),
                       title="Kalıp değiştirme talimatı")


def test_api_uploads_a_new_version_lists_versions_and_rolls_back(db, settings, model) -> None:
    first = _first(db, settings, model)
    with api_app(db, settings, model) as api:
        admin, uretim = person(db, "yonetici", "admin"), person(db, "ali", "uretim")
        refused = api.client.post(f"/v1/documents/{first.public_id}/versions", headers=bearer(uretim),
                                  files={"file": ("kalip-v2.pdf", pdfs.text_pdf([V2]), "application/pdf")})
        assert refused.status_code == 403
        response = api.client.post(f"/v1/documents/{first.public_id}/versions", headers=bearer(admin),
                                   files={"file": ("kalip-v2.pdf", pdfs.text_pdf([V2]), "application/pdf")})
        assert response.status_code == 202, response.text
        job = response.json()
        assert jobs.find_job(db, job["job_id"]).arguments["new_version_of"] == first.document_id
        jobs.run_worker(api.settings, wait=False, embedder_factory=lambda: api.embedder)
        done = api.client.get(f"/v1/jobs/{job['job_id']}", headers=bearer(admin)).json()
        assert done["status"] == "succeeded", done
        assert done["result"]["version"] == 2
        second = done["result"]["document_id"]

        listed = api.client.get("/v1/documents", headers=bearer(uretim)).json()["documents"]
        assert [(d["id"], d["version"], d["allowed_roles"], d["title"]) for d in listed] == [
            (second, 2, ["uretim"], "Kalıp değiştirme talimatı")]  # the old version's roles and title
        versions = api.client.get(f"/v1/documents/{first.public_id}/versions", headers=bearer(uretim)).json()
        assert [(v["document_id"], v["version"], v["current"]) for v in versions["versions"]] == [
            (second, 2, True), (first.public_id, 1, False)]
        assert versions["versions"][0]["label"].startswith("sürüm 2 · ")

        hits = api.client.get("/v1/search", headers=bearer(uretim), params={"q": "Kalip nasil tasinir?"}).json()
        assert {h["document_id"] for h in hits["results"]} == {second}
        assert hits["results"][0]["version"]["number"] == 2

        assert api.client.post(f"/v1/documents/{first.public_id}/current", headers=bearer(uretim)).status_code == 403
        back = api.client.post(f"/v1/documents/{first.public_id}/current", headers=bearer(admin))
        assert back.status_code == 200 and back.json()["version"] == 1 and back.json()["current"] is True
        assert error_code(api.client.post(f"/v1/documents/{first.public_id}/current", headers=bearer(admin))) == (
            "already_current")
        hits = api.client.get("/v1/search", headers=bearer(uretim), params={"q": "Kalip nasil tasinir?"}).json()
        assert {h["document_id"] for h in hits["results"]} == {first.public_id}

        again = api.client.post(f"/v1/documents/{second}/versions", headers=bearer(admin),
                                files={"file": ("kalip.pdf", pdfs.text_pdf([V1]), "application/pdf")})
        assert again.status_code == 202  # the duplicate is told by the job, once the bytes are read
        jobs.run_worker(api.settings, wait=False, embedder_factory=lambda: api.embedder)
        failed = api.client.get(f"/v1/jobs/{again.json()['job_id']}", headers=bearer(admin)).json()
        assert failed["status"] == "failed" and "güncel sürümüyle (sürüm 1) aynı" in failed["error"], failed


def test_cli_ingests_a_new_version_and_makes_an_earlier_one_current(db, settings, model, monkeypatch, tmp_path,
                                                                    capsys) -> None:
    from ragcore.cli import main

    monkeypatch.chdir(tmp_path)
    for name, value in {"DATABASE_URL": settings.database_url, "DATA_DIR": str(settings.data_dir),
                        "EMBED_BACKEND": "use", "OLLAMA_BASE_URL": "http://127.0.0.1:9", "LLM_BACKEND": "extractive",
                        "LOG_LEVEL": "WARNING"}.items():
        monkeypatch.setenv(name, value)
    first = _first(db, settings, model, roles=("uretim", "isg"))
    revised = tmp_path / "kalip-v2.pdf"
    revised.write_bytes(pdfs.text_pdf([V2]))

    assert main(["ingest", str(revised), "--new-version-of", first.public_id, "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["version"] == 2 and result["title"] == "Kalıp değiştirme talimatı"
    assert get_document(db, first.document_id, "admin").is_current is False
    assert find_document(db, result["document_id"], "isg").allowed_roles == ("uretim", "isg")

    assert main(["versions", result["document_id"], "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert [(v["version"], v["current"]) for v in listed] == [(2, True), (1, False)]
    assert main(["make-current", first.public_id]) == 0
    assert "sürüm 1" in capsys.readouterr().out
    assert [d.id for d in list_documents(db, "admin")] == [first.document_id]
    assert main(["make-current", first.public_id]) == 1
    assert "zaten güncel" in capsys.readouterr().err
    assert main(["ingest", str(revised)]) == 1  # a new document needs its roles
    assert "--roles" in capsys.readouterr().err


def test_the_upload_handler_offers_a_new_version_for_a_known_title_or_file_name(db, settings, model) -> None:
    from ui.context import AppContext
    from ui.upload import upload_document

    first = _first(db, settings, model)
    admin = create_user(db, "yonetici", "admin", "yonetici-parola-1")
    ctx = AppContext(settings=settings, db=db)
    data = pdfs.text_pdf([V2])

    offered = upload_document(ctx, admin, "kalip.pdf", data, ["uretim"])
    assert not offered.ok and offered.revision_of is not None and offered.revision_of.id == first.document_id
    assert "Yeni sürüm olarak yükle" in offered.message and "sürüm 1 · " in offered.message
    assert upload_document(ctx, admin, "baska.pdf", data, ["uretim"], "KALIP DEĞİŞTİRME TALİMATI").revision_of
    assert jobs.list_jobs(db) == []  # nothing queued until the admin chooses

    queued = upload_document(ctx, admin, "kalip.pdf", data, [], new_version_of=first.document_id)
    assert queued.ok and "yeni sürüm olarak sıraya alındı" in queued.message
    (job,) = jobs.list_jobs(db)
    assert job.arguments["new_version_of"] == first.document_id and job.arguments["roles"] == []
    separate = upload_document(ctx, admin, "kalip.pdf", pdfs.text_pdf([V2 + " Ek."]), ["uretim"], as_new_document=True)
    assert separate.ok
    assert [("new_version_of" in j.arguments) for j in jobs.list_jobs(db)] == [False, True]  # newest first


def test_a_conversation_export_names_the_cited_version(db, settings, model) -> None:
    from ragcore.conversations import Citation, Conversation, DocumentVersion, Turn
    from ragcore.conversations.export import export_file

    first = _first(db, settings, model)
    day = get_document(db, first.document_id, "admin").created_at
    citation = Citation(number=1, document_id=first.public_id, title="Kalıp değiştirme talimatı", article=None,
                        heading="", page_start=1, page_end=1, locator="s. 1", locator_kind="page",
                        filename="kalip.pdf", version=DocumentVersion(first.public_id, day, 2))
    turn = Turn(question="Kalip nasil tasinir?", resolved_question="Kalip nasil tasinir?", answer_text="Vinc ile [1].",
                outcome="answer", citations=(citation,), method="none", status="answered")
    conversation = Conversation(id="c" * 32, title="Kalıp", created_at=day, updated_at=day, turns=(turn,))
    text = export_file(conversation, "md", exported_at=day).data.decode("utf-8")
    assert f"[1] Kalıp değiştirme talimatı — s. 1 — sürüm 2 · {format_date(day)}" in text


def _documents_page(username: str, password: str):
    from streamlit.testing.v1 import AppTest

    from tests.app_support import REPO

    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=120)
    at.run()
    at.text_input(key="login_username").input(username)
    at.text_input(key="login_password").input(password)
    next(b for b in at.button if b.label == "Giriş yap").click()
    at.run()
    at.switch_page("pages/documents.py").run()
    assert not at.exception, at.exception
    return at


def test_the_card_lists_versions_and_the_admin_rolls_back(db, settings, model, monkeypatch) -> None:
    from tests.app_support import reset_app, set_app_env

    set_app_env(monkeypatch, DATABASE_URL=settings.database_url, DATA_DIR=str(settings.data_dir),
                ADMIN_PASSWORD="yonetici-parola-1", WORKER_IN_APP="false")
    reset_app(db)
    try:
        first = _first(db, settings, model)
        ingest_file(db, settings, model, pdfs.text_pdf([V2]), filename="kalip-v2.pdf", roles=["uretim"],
                    new_version_of=first.document_id)
        create_user(db, "ali", "uretim", "ali-parola-1")

        reader = _documents_page("ali", "ali-parola-1")
        captions = [c.value.replace("\\", "") for c in reader.caption]
        assert any(c.startswith("sürüm 2 · ") and "güncel" in c for c in captions), captions
        assert any(c.startswith("sürüm 1 · ") and "arşivde" in c for c in captions), captions
        assert not [b for b in reader.button if b.label == "Bu sürüme dön"]  # not for a reader

        admin = _documents_page("admin", "yonetici-parola-1")
        (rollback,) = [b for b in admin.button if b.label == "Bu sürüme dön"]
        rollback.click().run()
        assert not admin.exception, admin.exception
        assert get_document(db, first.document_id, "admin").is_current
        assert [d.id for d in list_documents(db, "uretim")] == [first.document_id]
    finally:
        reset_app(db)


def test_a_revised_documents_sources_name_their_version_in_the_label() -> None:
    from datetime import UTC, datetime

    from ragcore.core import Source
    from ui.sources import source_label

    day = datetime(2026, 12, 6, 9, 30, tzinfo=UTC)
    first = Source(rank=1, chunk_id=1, document_id=1, title="Talimat", filename="t.pdf", page_start=3, page_end=3,
                   article="Madde 4", score=1.0, text="…", version_no=1, version_date=day)
    revised = Source(**{**first.__dict__, "version_no": 2})
    assert source_label(first) == "Talimat · Madde 4 · s. 3"  # a first version is named inside the source
    assert source_label(revised) == f"Talimat · Madde 4 · s. 3 · sürüm 2 · {format_date(day)}"
