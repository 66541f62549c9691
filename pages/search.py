"""Kaynak arama (admin, isg): retrieval-only search showing scores."""

from ui.auth import require_role
from ui.search import render_search_page
from ui.shell import get_context

render_search_page(get_context(), require_role("admin", "isg"))
