"""İnceleme kuyruğu (admin): needs_review questions and negative feedback, newest first."""

from ui.auth import require_role
from ui.review import render_review_page
from ui.shell import get_context

render_review_page(get_context(), require_role("admin"))
