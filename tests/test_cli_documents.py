"""`python -m ragcore ingest|documents|chunks|delete-document|reembed` with --json, exit codes."""

from __future__ import annotations

import json

import pytest

from ragcore.cli import main
from ragcore.documents import ARTICLE_RE
from tests import pdfs
from tests.conftest import LAW_6331


@pytest.fixture()
def cli(db, settings, monkeypatch, tmp_path, capsys):
    """Run the CLI as a user would, configured through the environment only."""
    monkeypatch.chdir(tmp_path)  # no stray .env
    for name, value in {
        "DATABASE_URL": settings.database_url, "DATA_DIR": str(settings.data_dir), "EMBED_BACKEND": "use",
        "OLLAMA_BASE_URL": "http://127.0.0.1:9", "LLM_BACKEND": "extractive", "LOG_LEVEL": "WARNING",
    }.items():
        monkeypatch.setenv(name, value)

    def run(*argv: str) -> tuple[int, object, str]:
        code = main(list(argv))
        out, err = capsys.readouterr()
        payload = json.loads(out) if "--json" in argv and code == 0 else out
        return code, payload, err

    return run


@pytest.mark.needs_data("laws")
def test_ingest_chunks_documents_delete_round_trip(cli, tmp_path):
    code, result, _ = cli("ingest", str(LAW_6331), "--roles", "isg", "personel", "--json")
    assert code == 0
    assert set(result) == {"document_id", "version", "title", "file_format", "pages", "chunks", "windows", "seconds", "ocr_pages",
                           "oversized_pages", "undrawable_pages", "too_large_for_ocr", "hidden_parts", "quote_sentences"}
    assert (result["oversized_pages"], result["undrawable_pages"], result["too_large_for_ocr"]) == ([], [], [])
    # The reader (the default policy) reads its own windows; the rules' quoter sentences would be
    # embedding work no answer reads, so none are embedded (tests/test_quote_cache.py: under rules).
    assert result["quote_sentences"] == 0
    assert result["file_format"] == "pdf"
    assert result["pages"] == 24 and result["chunks"] > 40

    code, chunks, _ = cli("chunks", str(result["document_id"]), "--json")
    assert code == 0 and len(chunks) == result["chunks"]
    assert set(chunks[0]) == {"ordinal", "page_start", "page_end", "article", "locator", "text"}
    assert all(c["locator"] is None for c in chunks)  # a PDF's chunks are cited by page
    assert all(len(ARTICLE_RE.findall(c["text"])) <= 1 for c in chunks)
    assert all(1 <= c["page_start"] <= c["page_end"] <= 24 for c in chunks)

    code, listed, _ = cli("documents", "--json")
    assert code == 0 and listed == [{
        "document_id": result["document_id"], "title": result["title"], "filename": LAW_6331.name,
        "file_format": "pdf", "pages": 24, "chunks": result["chunks"], "allowed_roles": ["isg", "personel"],
        "version": 1,
    }]
    assert cli("documents", "--role", "ik", "--json")[1] == []

    code, _, err = cli("ingest", str(LAW_6331), "--roles", "isg", "--json")
    assert code == 1 and "zaten yüklü" in err and result["document_id"] in err

    code, deleted, _ = cli("delete-document", str(result["document_id"]), "--json")
    assert code == 0 and deleted["deleted"] == result["document_id"]
    assert cli("documents", "--json")[1] == []
    code, _, err = cli("delete-document", str(result["document_id"]))
    assert code == 1 and "bulunamadı" in err


def test_failures_exit_non_zero_with_the_message(cli, tmp_path):
    fake = tmp_path / "rapor.pdf"
    fake.write_bytes(pdfs.not_a_pdf())
    code, _, err = cli("ingest", str(fake), "--roles", "isg", "--json")
    assert code == 1 and "PDF, Word (.docx), Excel (.xlsx) ya da PowerPoint (.pptx) belgesi değil" in err
    code, _, err = cli("ingest", str(tmp_path / "yok.pdf"), "--roles", "isg")
    assert code == 1 and "okunamadı" in err
    code, _, err = cli("chunks", "12345")
    assert code == 1 and "bulunamadı" in err
    real = tmp_path / "talimat.pdf"  # roles are data (migration 021): the roles registry refuses an unknown one
    real.write_bytes(pdfs.text_pdf(["Forklift en fazla saatte on kilometre hizla surulur."]))
    code, _, err = cli("ingest", str(real), "--roles", "muhasebe")
    assert code == 1 and "Bilinmeyen rol: muhasebe" in err
    assert cli("documents", "--json")[1] == []


def test_human_output_and_reembed(cli, tmp_path):
    path = tmp_path / "yonetmelik.pdf"
    path.write_bytes(pdfs.law_pdf())
    code, out, _ = cli("ingest", str(path), "--roles", "isg", "--title", "Örnek")
    assert code == 0 and "“Örnek”: 2 sayfa" in out
    code, out, _ = cli("chunks", cli("documents", "--json")[1][0]["document_id"])
    assert code == 0 and "s. 1 · Madde 1" in out
    code, result, _ = cli("reembed", "--json")
    assert code == 0 and result["model"] == "use-multilingual-v3" and result["chunks"] > 0


def test_the_document_list_counts_a_word_files_sections_not_pages(cli, tmp_path):
    """A .docx has no pages: its line in `documents` counts headings ("5 başlık"), a PDF's pages."""
    from tests import docxs

    for name, data in (("yonetmelik.pdf", pdfs.law_pdf()), ("talimat.docx", docxs.regulation_docx())):
        (tmp_path / name).write_bytes(data)
        code, out, _ = cli("ingest", str(tmp_path / name), "--roles", "isg", "--title", f"Örnek {name}")
        assert code == 0 and ("5 başlık" if name.endswith(".docx") else "2 sayfa") in out
    code, out, _ = cli("documents")
    lines = {kind: line for line in out.strip().splitlines() for kind in ("pdf", "docx") if f".{kind}  (" in line}
    assert code == 0 and len(lines) == 2 and "(2 sayfa, " in lines["pdf"]
    assert "(5 başlık, " in lines["docx"] and " s." not in lines["docx"] and "sayfa" not in lines["docx"]


def test_an_upload_into_another_models_index_names_the_command_in_the_cli(cli, db, tmp_path):
    """The app's message says what to do in words; the operator at the server also gets the command."""
    from ragcore import store as dbmod

    previous = dbmod.current_embedding_space(db)
    with db.connection() as conn:
        dbmod.replace_embedding_space(conn, "ollama:bge-m3", 1024)
    try:
        path = tmp_path / "yonetmelik.pdf"
        path.write_bytes(pdfs.law_pdf())
        code, _, err = cli("ingest", str(path), "--roles", "isg")
        assert code == 1 and "yeniden gömmeli" in err and "python -m ragcore reembed" in err
    finally:
        with db.connection() as conn:
            if previous is None:
                conn.execute("ALTER TABLE chunks DROP COLUMN IF EXISTS embedding")
                conn.execute("DELETE FROM embedding_index")
            else:
                dbmod.replace_embedding_space(conn, previous.model, previous.dim)


def test_ingest_is_refused_below_the_free_disk_floor_and_stores_nothing(cli, tmp_path, monkeypatch, settings):
    from ragcore.core import disk_space

    path = tmp_path / "yonetmelik.pdf"
    path.write_bytes(pdfs.law_pdf())
    floor = disk_space("data", settings.data_dir).free_mb + 1024 * 1024  # a terabyte above what is free
    monkeypatch.setenv("MIN_FREE_DISK_MB", str(floor))
    for background in ([], ["--background"]):
        code, _, err = cli("ingest", str(path), "--roles", "isg", *background)
        assert code == 1 and err.startswith("error: Diskte yer az: veri klasöründe "), err
        assert "Yer açın ya da MIN_FREE_DISK_MB ayarını düşürün." in err and "Traceback" not in err
    monkeypatch.setenv("MIN_FREE_DISK_MB", "0")
    assert cli("documents", "--json")[1] == [] and cli("jobs", "--json")[1] == []
    assert not settings.uploads_dir.exists()
