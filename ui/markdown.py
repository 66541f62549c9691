"""The one way user-supplied text reaches a Streamlit element that renders Markdown.

File names, titles, roles, display names, questions, answers, chunk text, feedback comments
and messages that embed any of them must never be interpreted: no HTML (we never pass
`unsafe_allow_html`), and no Markdown either — a law's "(1) ... * ..." or a "$" in a price
would otherwise turn into lists, emphasis or LaTeX, a `[x](http://…)` into a live link and
`![x](http://…)` into an image the reader's browser fetches. Every ASCII punctuation
character that Streamlit's Markdown treats specially is backslash-escaped (CommonMark allows
escaping any ASCII punctuation, so the text renders unchanged), and our own `**bold**`
markers are added only around the question's terms after escaping.

Every Markdown body and label in `app.py`, `ui/` and `pages/` is a literal, or goes through
`escape_markdown` (or `highlight`/`escape_answer`, built on it), or is plain text (`st.text`,
`st.code`, dataframes); `tests/test_plain_text_static.py` checks that statically.
"""

from __future__ import annotations

import re
from collections.abc import Collection

import streamlit as st

from ragcore.core import PREFIX_LENGTH, turkish_lower
from ragcore.retrieval import MIN_TERM_CHARS

# CommonMark escapable punctuation, plus ":" (Streamlit emoji/icon/colour shortcodes) and "$" (LaTeX).
_SPECIAL = re.compile(r"([\\`*_{}\[\]()<>#+\-.!|~$:=\"'&^%@])")
_WORD = re.compile(r"[^\W_]+", re.UNICODE)


def escape_markdown(text: str) -> str:
    """Text that Streamlit's st.markdown shows literally; line breaks are kept as hard breaks."""
    escaped = _SPECIAL.sub(r"\\\1", str(text))
    return escaped.replace("\r\n", "\n").replace("\r", "\n").replace("\n", "  \n")


def alert(kind: str, text: str) -> None:
    """`text` as plain text in an alert box: "success", "warning", "error" or "info" (flash messages)."""
    if kind == "success":
        st.success(escape_markdown(text))
    elif kind == "warning":
        st.warning(escape_markdown(text))
    elif kind == "error":
        st.error(escape_markdown(text))
    else:
        st.info(escape_markdown(text))


MARK = (":orange-background[**", "**]")  # the marked sentence: bold on an orange background


def highlight(text: str, terms: Collection[str], marked: str = "") -> str:
    """Escaped `text` with the words whose prefix-5 form is one of `terms` in **bold**, and the
    sentence `marked` (whitespace collapsed, as the quoter reads it) on an orange background.

    `terms` come from `ragcore.retrieval.highlighting.highlight_terms` (content words that are rare in
    the documents the reader's role may read), computed once per answer or search. A `marked`
    sentence that is not in `text` marks nothing.
    """
    span = _find_collapsed(text, marked)
    if span is None:
        return _bold_terms(text, terms)
    start, end = span
    return (_bold_terms(text[:start], terms) + MARK[0] + escape_markdown(" ".join(text[start:end].split()))
            + MARK[1] + _bold_terms(text[end:], terms))


def _find_collapsed(text: str, sentence: str) -> tuple[int, int] | None:
    """Where `sentence` is in `text`, whatever whitespace (line breaks) separates its words there."""
    parts = sentence.split()
    if not parts:
        return None
    match = re.search(r"\s+".join(re.escape(p) for p in parts), text)
    return None if match is None else match.span()


def _bold_terms(text: str, terms: Collection[str]) -> str:
    out: list[str] = []
    position = 0
    for match in _WORD.finditer(text):
        out.append(escape_markdown(text[position : match.start()]))
        word = match.group(0)
        lowered = turkish_lower(word)
        if terms and len(lowered) >= MIN_TERM_CHARS and lowered[:PREFIX_LENGTH] in terms:
            out.append(f"**{escape_markdown(word)}**")
        else:
            out.append(escape_markdown(word))
        position = match.end()
    out.append(escape_markdown(text[position:]))
    return "".join(out)


def escape_answer(text: str, at_line_start: bool = True) -> str:
    """Like `escape_markdown`, but a ">" opening a line stays a blockquote.

    The extractive generator (and many models) quote passages as "> “…”"; a blockquote cannot
    link, embed or format anything, so allowing just that marker keeps answers readable while
    the quoted text itself stays escaped. `at_line_start` tells a streamed piece whether the
    previous piece ended a line.
    """
    escaped = escape_markdown(text)
    escaped = re.sub(r"(\n)\\>", r"\1>", escaped)
    if at_line_start and escaped.startswith("\\>"):
        escaped = escaped[1:]
    return escaped
