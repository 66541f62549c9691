"""Dokümanlar (every role): readable documents; the admin also uploads, changes roles, deletes."""

from ui.auth import signed_in_user
from ui.context import get_context
from ui.documents_page import render_documents_page

render_documents_page(get_context(), signed_in_user())
