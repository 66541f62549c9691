"""A conversation exported as Markdown and as PDF: the files opened and read back (the PDF's text
with pypdf), Turkish letters intact, hostile text inert, hidden answers hidden, and a clear
Turkish refusal when the PDF font is missing."""

from __future__ import annotations

import io
import re
from datetime import UTC, datetime

import pypdf
import pytest

from ragcore.conversations import (
    HIDDEN_ANSWER,
    METHOD_RULES,
    Citation,
    Conversation,
    DocumentVersion,
    ExportError,
    Turn,
)
from ragcore.conversations.export import NO_FONT, VERSION_NOTE, export_file, font_files, markdown, pdf

MOMENT = datetime(2026, 3, 9, 10, 30, tzinfo=UTC)
SHA = "3f2a9c1e4b7d" + "0" * 52
LEAVE = Citation(1, "3f2a9c1e-0000-4000-8000-000000000001", "İş Kanunu", "Madde 74", "Analık halinde çalışma ve süt izni",
                 31, 31, "s. 31", version=DocumentVersion(SHA, MOMENT))
ANSWER = ("İş Kanunu (4857), Madde 74'e göre:\n\n> “Kadın işçilerin doğumdan önce sekiz ve doğumdan sonra sekiz hafta "
          "olmak üzere toplam on altı haftalık süre için çalıştırılmamaları esastır.” [1]")


def conversation(*turns: Turn, title: str = "Hamileyim, doğum izni kaç hafta?") -> Conversation:
    return Conversation("3f2a9c1e-aaaa-4bbb-8ccc-000000000001", title, MOMENT, MOMENT, len(turns), turns)


def first_turn(**changes) -> Turn:
    values = dict(question="Hamileyim, doğum izni kaç hafta?", resolved_question="Hamileyim, doğum izni kaç hafta?",
                  answer_text=ANSWER, outcome="answer", citations=(LEAVE,), position=1, created_at=MOMENT)
    return Turn(**(values | changes))


def follow_up() -> Turn:
    return Turn("Peki doğumdan sonra?", "Doğumdan sonra? (hamileyim doğum izni hafta; Madde 74 – Analık halinde "
                "çalışma ve süt izni)", ANSWER, "answer", (LEAVE,), METHOD_RULES, position=2, created_at=MOMENT)


def pdf_text(data: bytes) -> str:
    reader = pypdf.PdfReader(io.BytesIO(data))
    return " ".join("".join(page.extract_text() for page in reader.pages).split())


def test_markdown_holds_questions_understanding_answers_citations_versions() -> None:
    file = export_file(conversation(first_turn(), follow_up()), "md", exported_at=MOMENT)
    assert file.filename == "sohbet-3f2a9c1e.md" and file.media_type == "text/markdown; charset=utf-8"
    text = file.data.decode("utf-8")
    lines = text.splitlines()
    assert lines[0] == "# Hamileyim, doğum izni kaç hafta?"
    assert "- Soru sayısı: 2" in lines and any(line.startswith("- Dışa aktarıldı: ") for line in lines)
    assert "## 1. Hamileyim, doğum izni kaç hafta?" in lines and "## 2. Peki doğumdan sonra?" in lines
    assert "*Şöyle anladım: Doğumdan sonra? (hamileyim doğum izni hafta; Madde 74 – Analık halinde çalışma ve süt izni)*" in lines
    assert "> “Kadın işçilerin doğumdan önce" in text and "esastır.” [1]" in text  # the quote and its mark as they were
    assert text.count("- [1] İş Kanunu — Madde 74 – Analık halinde çalışma ve süt izni — s. 31 — "
                      "sürüm: sha256 3f2a9c1e4b7d · 09.03.2026") == 2
    assert VERSION_NOTE in " ".join(text.split())


def test_markdown_renders_hostile_text_literally() -> None:
    hostile = ('<img src=x onerror=alert(1)> [tıkla](http://kötü.example) ![resim](http://kötü.example/i.png) '
               '`kod` \\[2\\]')
    turn = first_turn(question="# Başlık değil " + hostile, answer_text="Cevap [1]\n# yine başlık değil\n" + hostile)
    text = markdown(conversation(turn, title="<b>kalın</b> [a](b)"), MOMENT)
    unescaped = re.compile(r"(?<!\\)(?:[<>`]|\]\(|!\[)")  # HTML, a link, an image, a code span
    assert unescaped.findall(text) == []
    assert "\\<img src=x onerror=alert(1)\\>" in text and "\\[tıkla\\](http://kötü.example)" in text
    assert "\\# yine başlık değil" in text and "## 1. \\# Başlık değil" in text
    assert "`kod`" not in text and "\\`kod\\`" in text
    assert "Cevap [1]" in text  # our citation marks stay readable


def test_pdf_keeps_every_turkish_letter_and_every_part() -> None:
    data = export_file(conversation(first_turn(), follow_up()), "pdf", exported_at=MOMENT).data
    assert data.startswith(b"%PDF-")
    reader = pypdf.PdfReader(io.BytesIO(data))
    assert reader.metadata.title == "Hamileyim, doğum izni kaç hafta?"
    text = pdf_text(data)
    for expected in ("Hamileyim, doğum izni kaç hafta?", "2. Peki doğumdan sonra?",
                     "Şöyle anladım: Doğumdan sonra? (hamileyim doğum izni hafta;",
                     "Kadın işçilerin doğumdan önce sekiz", "Kaynaklar",
                     "[1] İş Kanunu — Madde 74 – Analık halinde çalışma ve süt izni — s. 31 — sürüm: sha256 3f2a9c1e4b7d · 09.03.2026",
                     "Belge sürümleri", "çalıştırılmamaları", "sayfa 1/1"):
        assert expected in text, expected
    letters = pdf_text(pdf(conversation(first_turn(answer_text="ğüşıöç ĞÜŞİÖÇ âîû")), MOMENT))
    assert "ğüşıöç ĞÜŞİÖÇ âîû" in letters


def test_a_long_conversation_breaks_into_pages() -> None:
    turns = [first_turn(position=n, question=f"Soru {n}: doğum izni kaç hafta?") for n in range(1, 51)]
    data = pdf(conversation(*turns), MOMENT)
    reader = pypdf.PdfReader(io.BytesIO(data))
    pages = len(reader.pages)
    assert pages > 5
    text = pdf_text(data)
    assert "50. Soru 50: doğum izni kaç hafta?" in text and f"sayfa {pages}/{pages}" in text


def test_a_hidden_answer_stays_hidden_in_both_files() -> None:
    hidden = first_turn(answer_text=HIDDEN_ANSWER, citations=(), hidden=True)
    for fmt in ("md", "pdf"):
        data = export_file(conversation(hidden), fmt, exported_at=MOMENT).data
        text = " ".join(data.decode().split()) if fmt == "md" else pdf_text(data)
        assert " ".join(HIDDEN_ANSWER.split()) in text and "Kaynaklar" not in text


def test_without_the_font_the_pdf_is_refused_in_turkish(tmp_path) -> None:
    with pytest.raises(ExportError) as refused:
        font_files((str(tmp_path), str(tmp_path / "yok")))
    assert str(refused.value) == NO_FONT and "fonts-dejavu-core" in NO_FONT and "Markdown" in NO_FONT
    with pytest.raises(ExportError, match="Bilinmeyen dışa aktarma biçimi: docx"):
        export_file(conversation(first_turn()), "docx")
