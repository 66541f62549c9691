"""A conversation taken away as a file: Markdown and PDF.

Both hold the same things: the title, when the conversation ran and when it was exported, and per
turn the question, what was understood ("Şöyle anladım: …"), the answer and its citations —
document, article, page and the document's version the answer read ("sürüm 2 · 06.12.2026";
an answer stored before documents had versions names the file's sha256 and upload date instead). The conversation comes in as its owner may read it now
(`get_conversation`), so a hidden answer stays hidden in the file.

The PDF is written by fpdf2 (pure Python) with DejaVu Sans, which has every Turkish letter; the
PDF core fonts have no ğ, ş or ı. The font comes from the system package (fonts-dejavu-core on
Debian and Ubuntu; the Dockerfile and CI install it); without it the PDF export says so in
Turkish and the Markdown export still works.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from fpdf import FPDF

from ragcore.conversations.models import Citation, Conversation, ConversationError, Turn
from ragcore.core import short_id

log = logging.getLogger(__name__)

MARKDOWN = "md"
PDF = "pdf"
FORMATS = (MARKDOWN, PDF)
MEDIA_TYPES = {MARKDOWN: "text/markdown; charset=utf-8", PDF: "application/pdf"}

VERSION_NOTE = ("Belge sürümleri: her kaynağın yanındaki sürüm, cevabın okunduğu belge sürümünün numarası ve "
                "yüklenme tarihidir; yeni sürüm yüklendiğinde eskisi arşivde saklanır. Sürümlerden önce verilmiş "
                "cevaplarda sürüm, belgenin dosyasının sha256 parmak izinin ilk 12 hanesi ve yüklenme tarihidir.")
FONT_DIRS = ("/usr/share/fonts/truetype/dejavu", "/usr/share/fonts/dejavu", "/usr/share/fonts/TTF",
             "/usr/share/fonts/dejavu-sans-fonts", "/usr/local/share/fonts/dejavu")
FONT_FILES = {"": "DejaVuSans.ttf", "B": "DejaVuSans-Bold.ttf"}
NO_FONT = ("PDF oluşturulamadı: Türkçe harfleri yazabilen DejaVu Sans yazı tipi bu sunucuda yok. Yöneticiniz "
           "fonts-dejavu-core paketini kurmalı. Sohbeti şimdilik Markdown olarak indirebilirsiniz.")


class ExportError(ConversationError):
    """The file could not be made; the message is Turkish and says what to do."""


@dataclass(frozen=True)
class ExportFile:
    filename: str
    media_type: str
    data: bytes


def export_file(conversation: Conversation, fmt: str, *, exported_at: datetime | None = None) -> ExportFile:
    """The conversation as a file in `fmt` ("md" or "pdf"), named after its id."""
    moment = exported_at or datetime.now(UTC)
    name = f"sohbet-{short_id(conversation.id)}.{fmt}"
    if fmt == MARKDOWN:
        return ExportFile(name, MEDIA_TYPES[fmt], markdown(conversation, moment).encode("utf-8"))
    if fmt == PDF:
        return ExportFile(name, MEDIA_TYPES[fmt], pdf(conversation, moment))
    raise ExportError(f"Bilinmeyen dışa aktarma biçimi: {fmt}. Geçerli biçimler: {', '.join(FORMATS)}.")


# ----------------------------------------------------------------------------- the shared wording


def _moment(value: datetime | None) -> str:
    return value.astimezone().strftime("%d.%m.%Y %H:%M") if value else "—"


def header_lines(conversation: Conversation, exported_at: datetime) -> list[str]:
    return [f"Sohbet: {_moment(conversation.created_at)} – {_moment(conversation.updated_at)}",
            f"Dışa aktarıldı: {_moment(exported_at)}",
            f"Soru sayısı: {len(conversation.turns)}"]


def citation_line(citation: Citation) -> str:
    """"[1] İş Kanunu — Madde 74 – Analık halinde çalışma ve süt izni — s. 31 — sürüm 2 · 06.12.2026" (an
    answer stored before documents had versions: "sürüm: sha256 … · 05.01.2026")."""
    parts = [f"[{citation.number}] {citation.title}", citation.article_label, citation.locator]
    if citation.version is not None:
        numbered = citation.version.number is not None
        parts.append(citation.version.label if numbered else f"sürüm: {citation.version.label}")
    return " — ".join(part for part in parts if part)


# ----------------------------------------------------------------------------- Markdown

# Our own small escape rather than ui.markdown's: that one escapes every punctuation mark for
# Streamlit, which would fill a file people read raw with backslashes. Here only what could
# render as something else is escaped — HTML (<…>), links and images ([…](…)), code spans and
# a heading's "#" — and a citation "[1]" and a quote's leading "> " stay as they are.
_ACTIVE = re.compile(r"([\\`<>\[\]])")
_CITATION = re.compile(r"\\\[(\d+)\\\](?!\()")
_QUOTE_START = re.compile(r"^\\>", re.MULTILINE)
_HEADING_START = re.compile(r"^(\s*)#", re.MULTILINE)


def escape(text: str) -> str:
    """`text` as Markdown that renders it literally (see above); line breaks kept as hard breaks."""
    escaped = _HEADING_START.sub(r"\1\\#", _ACTIVE.sub(r"\\\1", text.replace("\r\n", "\n")))
    escaped = _QUOTE_START.sub(">", _CITATION.sub(r"[\1]", escaped))
    return escaped.replace("\n", "  \n")


def markdown(conversation: Conversation, exported_at: datetime) -> str:
    lines = [f"# {escape(conversation.title)}", ""]
    lines += [f"- {escape(line)}" for line in header_lines(conversation, exported_at)]
    for turn in conversation.turns:
        lines += ["", f"## {turn.position}. {escape(' '.join(turn.question.split()))}", ""]
        if turn.shown:
            lines += [f"*{escape(turn.shown)}*", ""]
        lines += [escape(turn.answer_text) or "—", ""]
        if turn.citations:
            lines += ["**Kaynaklar**", ""]
            lines += [f"- {escape(citation_line(c))}" for c in turn.citations]
            lines.append("")
        lines.append(f"*{escape(_moment(turn.created_at))}*")
    lines += ["", "---", "", f"*{escape(VERSION_NOTE)}*", ""]
    return "\n".join(lines)


# ----------------------------------------------------------------------------- PDF


def font_files(folders: Sequence[str] = FONT_DIRS) -> dict[str, Path]:
    """The DejaVu Sans regular and bold files of the first folder that has both."""
    for folder in folders:
        found = {style: Path(folder) / name for style, name in FONT_FILES.items()}
        if all(path.is_file() for path in found.values()):
            return found
    log.error("no DejaVu Sans font in %s: install fonts-dejavu-core for PDF exports", ", ".join(folders))
    raise ExportError(NO_FONT)


class _Document(FPDF):
    def footer(self) -> None:
        self.set_y(-12)
        self.set_font("DejaVu", size=8)
        self.set_text_color(120)
        self.cell(0, 6, f"Dayanak · sayfa {self.page_no()}/{{nb}}", align="C")


def pdf(conversation: Conversation, exported_at: datetime, *, fonts: dict[str, Path] | None = None) -> bytes:
    document = _Document(format="A4")
    for style, path in (fonts or font_files()).items():
        document.add_font("DejaVu", style, str(path))
    document.set_title(conversation.title)
    document.set_creator("Dayanak")
    document.set_auto_page_break(auto=True, margin=16)
    document.add_page()
    _paragraph(document, conversation.title, size=16, style="B", height=8)
    for line in header_lines(conversation, exported_at):
        _paragraph(document, line, size=9, gray=True)
    for turn in conversation.turns:
        _turn(document, turn)
    document.ln(4)
    _paragraph(document, VERSION_NOTE, size=8, gray=True)
    return bytes(document.output())


def _turn(document: FPDF, turn: Turn) -> None:
    document.ln(4)
    _paragraph(document, f"{turn.position}. {' '.join(turn.question.split())}", size=12, style="B", height=6)
    if turn.shown:
        _paragraph(document, turn.shown, size=9, gray=True)
    document.ln(1)
    _paragraph(document, turn.answer_text or "—", size=10)
    if turn.citations:
        document.ln(1)
        _paragraph(document, "Kaynaklar", size=9, style="B")
        for citation in turn.citations:
            _paragraph(document, citation_line(citation), size=9)
    _paragraph(document, _moment(turn.created_at), size=8, gray=True)


def _paragraph(document: FPDF, text: str, *, size: int, style: str = "", gray: bool = False,
               height: float = 5) -> None:
    document.set_font("DejaVu", style, size)
    document.set_text_color(110 if gray else 0)
    document.multi_cell(0, height, text.replace("\t", "    "), new_x="LMARGIN", new_y="NEXT", align="L")
