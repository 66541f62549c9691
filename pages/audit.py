"""Denetim (admin and denetçi): the audit trail and the usage dashboard, read-only."""

from ui.audit import render_audit_page, require_audit_reader
from ui.shell import get_context

render_audit_page(get_context(), require_audit_reader())
