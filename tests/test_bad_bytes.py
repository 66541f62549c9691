"""Bytes PostgreSQL cannot store, arriving where text enters Dayanak.

U+0000 (a PDF text layer can yield it; a question can carry it) and lone surrogates (an
undecodable file name or argument becomes one in Python) are cleaned by `ragcore.core.text.sanitize`
at the boundary: PDF extraction, upload metadata, questions, feedback and model output. Before,
a PDF with a NUL was refused with a PostgreSQL message, a lone surrogate in a title raised
`UnicodeEncodeError`, and a question with a NUL streamed its answer and then failed to be logged.
"""

from __future__ import annotations

import io
import json

import pytest
from pypdf import PdfReader

from ragcore.access import User, create_user
from ragcore.answer import AnswerService, ExtractiveGenerator, OllamaGenerator, set_feedback
from ragcore.cli import main as cli_main
from ragcore.core import STATUS_ANSWERED, sanitize
from ragcore.documents import ingest_pdf
from ragcore.embed import USEEmbedder
from tests import pdfs
from tests.questions_support import logged_questions

QUESTION = "Bu Yonetmelik butun isyerlerine uygulanir mi?"


@pytest.fixture(scope="module")
def embedder() -> USEEmbedder:
    return USEEmbedder()


@pytest.fixture()
def mehmet(db, settings, embedder) -> User:
    ingest_pdf(db, settings, embedder, pdfs.law_pdf(), filename="yonetmelik.pdf", roles=["isg"])
    return create_user(db, "mehmet", "isg", "mehmet-parola")


def _stored_text(db) -> list[tuple]:
    with db.connection() as conn:
        return conn.execute("SELECT title, filename, (SELECT string_agg(text, ' ') FROM chunks c "
                            "WHERE c.document_id = d.id) FROM documents d ORDER BY id").fetchall()


def test_sanitize_removes_controls_and_repairs_surrogates() -> None:
    assert sanitize("a\x00b\x01c\x7fd\x9fe") == "abcde"
    assert sanitize("satır\nsatır\tsekme\r\n") == "satır\nsatır\tsekme\r\n"  # whitespace stays
    assert sanitize("başlık\nikinci\tsatır", single_line=True) == "başlık ikinci satır"
    assert sanitize("rapor\udcff.pdf") == "rapor\ufffd.pdf"
    assert sanitize("\ud83d\ude00 ve \ud800") == "😀 ve \ufffd"  # a real pair is joined, a lone half replaced
    assert sanitize("İşveren ğüşıöç ﬁ") == "İşveren ğüşıöç ﬁ"


def test_a_pdf_whose_text_layer_yields_nul_is_stored_without_it(db, settings, embedder) -> None:
    data = pdfs.text_pdf(["MADDE 1 - (1) Isveren\x00 calisanlara egitim verir.\x01\n"
                          "MADDE 2 - (1) Egitim\x00 kayit altina alinir."])
    raw = PdfReader(io.BytesIO(data)).pages[0].extract_text()
    assert "\x00" in raw  # the test PDF really carries the NUL in its text layer
    result = ingest_pdf(db, settings, embedder, data, filename="nul.pdf", roles=["isg"])
    assert result.chunks >= 1
    [(_, _, text)] = _stored_text(db)
    assert "\x00" not in text and "\x01" not in text and "Isveren calisanlara egitim verir." in text


def test_lone_surrogates_in_title_and_file_name_are_replaced(db, settings, embedder, tmp_path, capsys,
                                                             monkeypatch) -> None:
    result = ingest_pdf(db, settings, embedder, pdfs.law_pdf(), filename="rapor\udc80.pdf", roles=["isg"],
                        title="Yönetmelik \udcff\nek")
    assert result.title == "Yönetmelik \ufffd ek"
    assert _stored_text(db)[0][:2] == ("Yönetmelik \ufffd ek", "rapor\ufffd.pdf")
    # The same through the command line: a file name with an undecodable byte reaches Python
    # (argv, os.listdir) as a lone surrogate.
    for name, value in {"DATABASE_URL": settings.database_url, "DATA_DIR": str(settings.data_dir),
                        "EMBED_BACKEND": "use", "LLM_BACKEND": "extractive"}.items():
        monkeypatch.setenv(name, value)
    monkeypatch.chdir(tmp_path)  # no .env from the repository
    path = tmp_path / "kanun\udcfe.pdf"
    path.write_bytes(pdfs.text_pdf(["MADDE 1 - (1) Baska bir belge metni burada yer alir."]))
    code = cli_main(["ingest", str(path), "--roles", "isg", "--title", "Kanun \udcfe", "--json"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert json.loads(out)["title"] == "Kanun \ufffd"
    assert _stored_text(db)[1][:2] == ("Kanun \ufffd", "kanun\ufffd.pdf")


def test_a_question_with_nul_is_answered_and_logged(mehmet, db, settings, embedder) -> None:
    service = AnswerService(db, settings.replace(refusal_threshold=0.0), embedder, ExtractiveGenerator(embedder))
    answer = service.ask(mehmet, "Bu Yonetmelik\x00 butun isyerlerine\udc80 uygulanir mi?")
    assert answer.status == STATUS_ANSWERED and answer.question_id is not None
    [logged] = logged_questions(db, "mehmet")
    assert logged.public_id == answer.question_id
    assert logged.question == "Bu Yonetmelik butun isyerlerine\ufffd uygulanir mi?"


def test_feedback_comment_with_nul_and_a_lone_surrogate_is_stored(mehmet, db, settings, embedder) -> None:
    answer = AnswerService(db, settings.replace(refusal_threshold=0.0), embedder,
                           ExtractiveGenerator(embedder)).ask(mehmet, QUESTION)
    set_feedback(db, answer.question_id, "mehmet", -1, "eksik\x00 cevap \ud800")
    assert logged_questions(db, "mehmet")[0].feedback_comment == "eksik cevap \ufffd"


def test_model_output_with_nul_is_logged_without_it(mehmet, db, settings, embedder, fake_llm) -> None:
    fake_llm.behaviour.reply = "Evet\x00, Yönetmelik bütün işyerlerine uygulanır [1]."
    generator = OllamaGenerator(fake_llm.url, "qwen2.5:7b-instruct")
    answer = AnswerService(db, settings.replace(refusal_threshold=0.0), embedder, generator).ask(mehmet, QUESTION)
    assert answer.status == STATUS_ANSWERED
    assert logged_questions(db, "mehmet")[0].answer == "Evet, Yönetmelik bütün işyerlerine uygulanır [1]."
