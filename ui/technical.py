"""The "Teknik ayrıntılar" expander: the one place where the UI shows identifiers — model ids,
file and folder names, settings (EMBED_BACKEND), method names (BM25, RRF), commands.

Everything else on a page says it in plain Turkish; whoever needs the code behind a plain line
opens this. The browser's word walk (tests/test_browser.py) skips these expanders, and
tests/test_plain_text_static.py checks that identifiers stay inside them.
"""

from __future__ import annotations

from collections.abc import Sequence

import streamlit as st

from ui.markdown import escape_markdown

TECHNICAL = "Teknik ayrıntılar"
WORKER_COMMAND = "python -m ragcore worker"


def technical_expander():
    """The expander itself, for details that are more than "name: value" lines (a run card's table)."""
    return st.expander(TECHNICAL)


def technical_details(lines: Sequence[tuple[str, str]]) -> None:
    """"name: value" lines, folded away under TECHNICAL."""
    with technical_expander():
        for name, value in lines:
            st.caption(escape_markdown(f"{name}: {value}"))
