"""Değerlendirme laboratuvarı (admin): gold sets and runs on the company's documents, TQuAD runs.

Thin on purpose: the page is `ui/lab_page.py` (and the `ui/lab_*.py` tabs) over `eval`.
"""

from ui.auth import require_role
from ui.lab_page import render_lab_page
from ui.shell import get_context

render_lab_page(get_context(), require_role("admin"))
