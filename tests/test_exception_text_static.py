"""Static check: an exception's own text reaches a user only when that text is ours, in Turkish.

The project's errors (`QuestionError`, `JobError`, `IngestError`, `PdfError`, `TitleError`,
`DuplicateDocument`, …) carry a message written for the user: what happened and what to do.
Any other exception — a driver's, the operating system's, a bug's `KeyError` — carries text for
an operator (a path, a host, a DSN, English), so the page shows a Turkish sentence of ours and
the log gets the exception. This test parses `app.py`, `ui/` and `pages/`: in a handler
`except T as exc:` whose types are not all ours, `exc` may appear only in a logging call
(`log.warning(…, exc)`, `log.exception(…)`), as the cause of a raise, or in a call that writes
a record for the log (the spool of a question the database did not get); never in a value that
is shown, returned, stored in session state or formatted into a message.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SOURCES = [REPO / "app.py", *sorted((REPO / "ui").glob("*.py")), *sorted((REPO / "pages").glob("*.py"))]

# Exception types whose str() is a deliberate Turkish message for the user (checked where raised).
TURKISH_MESSAGES = {
    "QuestionError", "QuestionLogError", "ExpansionError", "GeneratorError", "EmbeddingError", "JobError", "JobNotFound",
    "IngestError", "DuplicateDocument", "PdfError", "TitleError", "DocumentNotFound", "PageNotFound", "PageTooLarge",
    "RetrievalError", "UserError", "TokenError", "GoldRunError", "GoldFormatError", "GoldSetError",
    "ReaderModelError", "ConversationError", "ConversationNotFound", "ConversationFull", "AccountInactive",
    "InvalidTitle", "ExportError", "RoleError", "AuditFilterError", "AuditForbidden", "VersionError",
}
LOGGERS = {"log", "logger", "logging"}
# Calls that write the exception into a record for the log, never onto the page.
RECORD_SINKS = {"keep_unsent_question"}


@dataclass(frozen=True)
class Violation:
    file: str
    line: int
    name: str
    caught: str

    def __str__(self) -> str:
        return (f"{self.file}:{self.line}: the text of `{self.name}` ({self.caught}) may reach the user; "
                "show a Turkish message of ours and log the exception")


def _type_names(node: ast.expr | None) -> list[str]:
    if node is None:
        return ["BaseException"]
    if isinstance(node, ast.Tuple):
        return [name for element in node.elts for name in _type_names(element)]
    if isinstance(node, ast.Attribute):
        return [node.attr]
    if isinstance(node, ast.Name):
        return [node.id]
    return ["?"]


def _sink(call: ast.Call) -> bool:
    func = call.func
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id in LOGGERS:
        return True
    return isinstance(func, ast.Name) and func.id in RECORD_SINKS


def _allowed_uses(handler: ast.ExceptHandler) -> set[int]:
    """The ids of the Name nodes inside a logging call, a record sink or a raise's cause."""
    allowed: set[int] = set()
    for node in ast.walk(handler):
        inside: list[ast.AST] = []
        if isinstance(node, ast.Call) and _sink(node):
            inside = [*node.args, *(k.value for k in node.keywords)]
        elif isinstance(node, ast.Raise) and node.cause is not None:
            inside = [node.cause]
        allowed |= {id(n) for part in inside for n in ast.walk(part) if isinstance(n, ast.Name)}
    return allowed


def violations(source: str, filename: str) -> list[Violation]:
    found: list[Violation] = []
    for handler in ast.walk(ast.parse(source, filename)):
        if not isinstance(handler, ast.ExceptHandler) or handler.name is None:
            continue
        caught = _type_names(handler.type)
        if all(name in TURKISH_MESSAGES for name in caught):
            continue
        allowed = _allowed_uses(handler)
        found += [Violation(filename, node.lineno, handler.name, ", ".join(caught))
                  for node in ast.walk(handler)
                  if isinstance(node, ast.Name) and node.id == handler.name and id(node) not in allowed]
    return found


def test_no_foreign_exception_text_reaches_a_user() -> None:
    assert SOURCES and all(path.is_file() for path in SOURCES)
    found = [v for path in SOURCES for v in violations(path.read_text(encoding="utf-8"), str(path.relative_to(REPO)))]
    assert not found, "\n".join(map(str, found))


def test_the_check_catches_each_form() -> None:
    """The rule itself: every way of letting foreign text out is reported, the log and ours are not."""
    bad = [
        "try:\n    f()\nexcept Exception as exc:\n    st.error(str(exc))",
        "try:\n    f()\nexcept Exception as exc:\n    st.error(escape_markdown(f'Arama modeli kullanılamıyor: {exc}'))",
        "try:\n    f()\nexcept Exception as exc:\n    turn.error = f'Cevap oluşturulurken bir hata oluştu: {exc}'",
        "def g():\n    try:\n        f()\n    except Exception as exc:\n        return Outcome(False, f'Sıraya alınamadı: {exc}')",
        "try:\n    f()\nexcept Exception as e:\n    errors['embedder'] = str(e)",
        "try:\n    f()\nexcept (JobError, OSError) as exc:\n    st.warning(escape_markdown(str(exc)))",
        "try:\n    f()\nexcept ValueError as exc:\n    st.session_state['flash'] = exc.args[0]",
        "try:\n    f()\nexcept psycopg.Error as exc:\n    log.error('x: %s', exc)\n    st.error(repr(exc))",
        "try:\n    f()\nexcept:\n    pass\ntry:\n    f()\nexcept KeyError as exc:\n    st.toast(exc)",
    ]
    for code in bad:
        assert len(violations(code, "x.py")) == 1, code
    good = [
        "try:\n    f()\nexcept jobs.JobError as exc:\n    st.warning(escape_markdown(str(exc)))",
        "try:\n    f()\nexcept (GoldRunError, JobError) as exc:\n    st.error(escape_markdown(str(exc)))",
        "try:\n    f()\nexcept QuestionError as exc:\n    turn.error = str(exc)",
        "try:\n    f()\nexcept Exception:\n    log.exception('failed')\n    st.error(FAILED)",
        "try:\n    f()\nexcept Exception as exc:\n    log.warning('%s unavailable', part, exc_info=exc)\n    st.error(FAILED)",
        "try:\n    f()\nexcept OSError as exc:\n    raise JobFailed('Dosya okunamadı.') from exc",
        "try:\n    f()\nexcept DatabaseUnavailable as exc:\n    kept = keep_unsent_question(ctx, exc)\n    st.error(DOWN)",
    ]
    for code in good:
        assert violations(code, "x.py") == [], code


def test_an_unexpected_upload_failure_shows_our_sentence_and_logs_the_cause(monkeypatch, caplog) -> None:
    """The rule at run time, on the upload handler: an OS error's text (a server path) stays in the log."""
    import logging

    from ragcore import jobs
    from ragcore.core import User
    from ui import upload
    from ui.context import AppContext

    def full_disk(*args, **kwargs):
        raise OSError("[Errno 28] No space left on device: '/srv/dayanak/jobs/17.pdf'")

    monkeypatch.setattr(jobs, "submit_ingest", full_disk)
    admin = User(id=1, username="admin", display_name="Yönetici", roles=("admin",), active=True)
    caplog.set_level(logging.ERROR, logger="dayanak.app")
    # as_new_document: no database here to look for a stored document it could be a version of
    outcome = upload.upload_document(AppContext(settings=None, db=None), admin, "yonetmelik.pdf",  # type: ignore[arg-type]
                                     b"%PDF-1.4", ["isg"], as_new_document=True)
    assert not outcome.ok and outcome.message == upload.QUEUE_FAILED
    assert "/srv/dayanak" not in outcome.message and "/srv/dayanak/jobs/17.pdf" in caplog.text
