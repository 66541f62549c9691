"""Dokümanlar (every role): readable documents; the admin also uploads, changes roles, deletes."""

from ui.auth import signed_in_user
from ui.documents_page import render_documents_page
from ui.shell import get_context

render_documents_page(get_context(), signed_in_user())
