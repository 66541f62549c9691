"""Hostile names stay text: Markdown, HTML, LaTeX, links and images in file names, titles, display
names, questions, answers, chunk text and feedback render literally on every page.

The document is uploaded through the Dokümanlar page with a hostile file name and title, its
PDF text carries the same constructs, a user with a hostile display name asks a hostile
question and leaves a hostile comment; then the documents list, the delete confirmation, the
role-change message, a duplicate upload's error, the review queue, Kaynak arama and the chat
are rendered and every Markdown-interpreted string of every element (bodies, labels, help
texts, captions, headings, status boxes) is checked: each construct appears, and only in its
escaped form. Plain-text elements (`st.text`, `st.code`, tables) are left out: they are never
interpreted.
"""

from __future__ import annotations

import re
import time

import pytest
from streamlit.testing.v1 import AppTest

from ragcore import jobs
from ragcore.access import create_user
from ragcore.answer import set_feedback
from ragcore.store import Database
from tests import pdfs
from tests.test_app import (
    ADMIN_PASSWORD,
    app_env,  # noqa: F401 - the app fixture, used by name
    button,
    login,
    new_app,
)

# Each is something Streamlit's Markdown would act on: emphasis, colour, a link, an image the
# browser would fetch, LaTeX, HTML, inline code, and line-start blocks (heading, quote, list).
CONSTRUCTS = ["**kalin**", ":red[kirmizi]", "[tikla](http://example.invalid/x)",
              "![resim](http://example.invalid/y.png)", "$x^2$", "<b>etiket</b>", "`kod`"]
LINE_STARTS = ["# baslik", "> alinti", "- madde"]
HOSTILE = " ".join(CONSTRUCTS)
TITLE = f"Yonerge {HOSTILE}"
# No "/" in the file name: the upload keeps only its last path component.
FILENAME = "**dosya** :red[ad] [x](mailto:a@example.invalid) $y$ <i>z<-i> `k`.pdf"
FILE_CONSTRUCTS = ["**dosya**", ":red[ad]", "[x](mailto:a@example.invalid)", "$y$", "<i>z<-i>", "`k`"]
DISPLAY_NAME = "Ayse **kalin** :red[kirmizi] ![resim](http://example.invalid/y.png)"
PDF_TEXT = (f"Madde 1 - Yangin tatbikati yilda bir kez yapilir {HOSTILE}.\n"
            + "\n".join(f"{line} yangin tatbikati" for line in LINE_STARTS))
# The chat bolds the question's words in the sources, so the question's constructs use words
# that the document does not contain (a bolded word inside a construct is still literal text,
# but this check would not recognise the construct any more).
QUESTION_CONSTRUCTS = ["**soru**", ":blue[mavi]", "[link](mailto:soru@posta.test)", "$q_1$", "<u>alt</u>", "`komut`"]
QUESTION = f"Yangin tatbikati {' '.join(QUESTION_CONSTRUCTS)} ne zaman yapilir?"
COMMENT = f"Yorum {HOSTILE}"
MARKDOWN_FIELDS = {"body", "label", "help", "placeholder"}
PLAIN_ELEMENTS = {"Text", "Code", "Arrow", "Json", "ArrowNamedDataSet"}
SPECIAL = set("\\`*_{}[]()<>#+-.!|~$:=\"'&^%@")


def markdown_strings(at: AppTest) -> list[str]:
    """Every string field that Streamlit renders as Markdown, from every element and block."""
    found: list[str] = []

    def visit(message) -> None:
        if message.DESCRIPTOR.name in PLAIN_ELEMENTS:
            return
        for field, value in message.ListFields():
            values = list(value) if field.is_repeated else [value]
            if field.type == field.TYPE_MESSAGE:
                for item in values:
                    visit(item)
            elif field.type == field.TYPE_STRING and field.name in MARKDOWN_FIELDS:
                found.extend(values)

    def walk(node) -> None:
        proto = getattr(node, "proto", None)
        if proto is not None and hasattr(proto, "DESCRIPTOR"):
            visit(proto)
        for child in getattr(node, "children", {}).values():
            walk(child)

    walk(at._tree)
    return found


def _pattern(construct: str) -> re.Pattern[str]:
    """The construct with any of its characters optionally backslash-escaped."""
    return re.compile("".join(r"\\?" + re.escape(c) for c in construct))


def _escaped(match: str, construct: str) -> bool:
    """Every special character of the construct is preceded by a backslash in `match`."""
    position = 0
    for char in construct:
        if char in SPECIAL:
            if match[position] != "\\":
                return False
            position += 1
        position += 1
    return True


def assert_literal(at: AppTest, constructs: list[str], where: str) -> None:
    """Each construct is shown (in some Markdown string) and only ever in escaped form."""
    assert not at.exception, at.exception
    strings = markdown_strings(at)
    for construct in constructs:
        matches = [m.group(0) for s in strings for m in _pattern(construct).finditer(s)]
        assert matches, f"{where}: {construct!r} is not shown at all"
        raw = [m for m in matches if not _escaped(m, construct)]
        assert not raw, f"{where}: {construct!r} rendered as Markdown: {raw[:3]}"


def test_the_check_itself() -> None:
    assert _escaped(r"\*\*kalin\*\*", "**kalin**")
    assert not _escaped(r"\*\*kalin*\*", "**kalin**")
    assert not _escaped("$x^2$", "$x^2$")


def _upload(admin: AppTest, db: Database, data: bytes) -> None:
    """Submit the upload and wait (bounded) for the app's worker to finish its job, then redraw."""
    admin.switch_page("pages/documents.py").run()
    admin.get("file_uploader")[0].set_value((FILENAME, data, "application/pdf"))
    admin.text_input(key="doc_upload_title").input(TITLE)
    admin.multiselect(key="doc_upload_roles").set_value(["isg"])
    button(admin, "Yükle").click()
    admin.run()
    end = time.monotonic() + 120
    while any(job.active for job in jobs.list_jobs(db, limit=1)):
        assert time.monotonic() < end, "the upload job did not finish within 120 s"
        time.sleep(0.1)
    admin.run()


@pytest.mark.usefixtures("app_env")
def test_hostile_names_render_literally_everywhere(db: Database, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REFUSAL_THRESHOLD", "0")  # always answer, so the chat shows the sources
    data = pdfs.text_pdf([PDF_TEXT])
    admin = login(new_app(), "admin", ADMIN_PASSWORD)

    _upload(admin, db, data)  # upload: the success message names the title
    assert_literal(admin, CONSTRUCTS, "upload success message")
    with db.connection() as conn:
        doc_id, stored_title, stored_name = conn.execute("SELECT public_id::text, title, filename FROM documents").fetchone()
    assert (stored_title, stored_name) == (TITLE, FILENAME)  # stored as typed, escaped only when shown

    admin.switch_page("pages/documents.py").run()  # the documents list: title, file name, uploader
    assert_literal(admin, CONSTRUCTS + FILE_CONSTRUCTS, "documents list")

    _upload(admin, db, data)  # the same file again: the refusal names the title
    assert_literal(admin, CONSTRUCTS, "duplicate upload error")

    admin.switch_page("pages/documents.py").run()
    button(admin, "Sil").click()
    admin.run()  # the delete confirmation names the title
    assert_literal(admin, CONSTRUCTS, "delete confirmation")
    button(admin, "Vazgeç").click()
    admin.run()

    admin.multiselect(key=f"doc_roles_{doc_id}").set_value(["isg", "personel"])
    button(admin, "Rolleri kaydet").click()
    admin.run()  # the role-change message names the title
    assert_literal(admin, CONSTRUCTS, "role change message")

    create_user(db, "ayse", "isg", "ayse-parola-1", display_name=DISPLAY_NAME)
    ayse = login(new_app(), "ayse", "ayse-parola-1")
    assert_literal(ayse, ["**kalin**", ":red[kirmizi]", "![resim](http://example.invalid/y.png)"], "sidebar name")
    ayse.chat_input(key="chat_input").set_value(QUESTION).run()  # question, answer, source labels, chunk text
    assert ayse.session_state["chat_history"][-1].sources, "the chat showed no source"
    assert_literal(ayse, QUESTION_CONSTRUCTS + CONSTRUCTS + LINE_STARTS, "chat")
    with db.connection() as conn:
        question_id = conn.execute("SELECT public_id::text FROM questions WHERE username = 'ayse'").fetchone()[0]
    set_feedback(db, question_id, "ayse", -1, COMMENT)

    admin.switch_page("pages/review.py").run()  # question, answer, comment, source titles
    assert_literal(admin, QUESTION_CONSTRUCTS + CONSTRUCTS, "review queue")

    admin.switch_page("pages/search.py").run()
    admin.text_input(key="search_question").input("yangin tatbikati ne zaman")
    button(admin, "Ara").click()
    admin.run()  # result labels and highlighted chunk text
    assert_literal(admin, CONSTRUCTS + LINE_STARTS, "source search")
