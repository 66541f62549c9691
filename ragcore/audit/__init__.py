"""The audit trail: the questions log read by an admin or an auditor (denetçi), never by anyone else.

Who asked what, when, with which roles, what they were told (answer, closest passages, no answer,
error) and exactly which passages they were shown (document, page, version), filtered by user,
role, document, outcome and date and read a page at a time (`audit_page`); the same rows as a CSV
file for Excel (`csv_chunks`); the usage dashboard's figures (`usage`); and the retention that
deletes rows past AUDIT_RETENTION_DAYS (`expire_audit_rows`, run by the jobs package's
expire_audit job). Every read checks the reader first (`can_read_audit`).
"""

from ragcore.audit.export import BOM, HEADERS, csv_chunks, csv_filename, cut_notice, role_names
from ragcore.audit.trail import (
    EVERY_ROW,
    MAX_PAGE_SIZE,
    OUTCOME_LABELS,
    PAGE_SIZE,
    AuditFilter,
    AuditFilterError,
    AuditForbidden,
    AuditPage,
    AuditRow,
    ShownDocument,
    ShownPassage,
    asking_users,
    audit_page,
    audit_rows,
    can_read_audit,
    document_key,
    expire_audit_rows,
    expired_audit_rows,
    require_audit_reader,
    role_label,
    shown_documents,
)
from ragcore.audit.usage import UnansweredGroup, Usage, usage

__all__ = [
    "EVERY_ROW",
    "BOM",
    "HEADERS",
    "MAX_PAGE_SIZE",
    "OUTCOME_LABELS",
    "PAGE_SIZE",
    "AuditFilter",
    "AuditFilterError",
    "AuditForbidden",
    "AuditPage",
    "AuditRow",
    "ShownDocument",
    "ShownPassage",
    "UnansweredGroup",
    "Usage",
    "asking_users",
    "audit_page",
    "audit_rows",
    "can_read_audit",
    "csv_chunks",
    "csv_filename",
    "cut_notice",
    "document_key",
    "expire_audit_rows",
    "expired_audit_rows",
    "require_audit_reader",
    "role_label",
    "role_names",
    "shown_documents",
    "usage",
]
