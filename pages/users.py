"""Kullanıcılar (admin): create users, change roles, deactivate, reset passwords."""

from ui.auth import require_role
from ui.shell import get_context
from ui.users_admin import render_users_page

render_users_page(get_context(), require_role("admin"))
