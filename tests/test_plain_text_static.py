"""Static check: nothing but literals and `ui.markdown`'s escaped output reaches a Markdown-rendering call.

Streamlit renders Markdown (links, images, `$…$` LaTeX, `:red[…]` colours, emphasis) in the body
of `st.markdown`/`st.caption`/alerts/headings/toasts and in the label and `help` of expanders,
popovers, status boxes, buttons, badges, metrics and every input widget. A file name, title,
role, display name, question, answer, chunk text, feedback comment or an error message that
embeds one of them must therefore go through `ui.markdown` (`escape_markdown`, or `highlight`
/ `escape_answer`, which are built on it) or be shown as plain text (`st.text`, `st.code`,
dataframes). This test parses `app.py`, `ui/` and `pages/` and refuses anything else in those
arguments: a bare variable, an f-string, `%`/`.format()` or a concatenation with a non-literal
part, or a call `getattr(st, kind)(…)` that hides which function renders.

Allowed besides escaped values: module constants bound once to literal text, and inside
f-strings `len(…)`, numbers with a numeric format spec (`{x:.3f}`) and operator settings
(`settings.…`, `ctx.settings.…`): none of them is text a user typed or uploaded.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SOURCES = [REPO / "app.py", *sorted((REPO / "ui").glob("*.py")), *sorted((REPO / "pages").glob("*.py"))]

SAFE_HELPERS = {"escape_markdown", "highlight", "escape_answer"}
# Method name -> positions of Markdown arguments (label/body). Receivers are not resolved
# (`st`, `st.sidebar`, `cols[0]`, a status box …): any call of these names is checked.
BODY_FIRST = {
    "markdown", "caption", "title", "header", "subheader", "success", "info", "warning", "error", "toast",
    "expander", "popover", "status", "badge", "metric", "spinner", "button", "download_button", "link_button",
    "form_submit_button", "page_link", "checkbox", "toggle", "radio", "selectbox", "multiselect", "text_input",
    "text_area", "number_input", "slider", "select_slider", "file_uploader", "date_input", "time_input",
    "color_picker", "camera_input", "pills", "segmented_control", "feedback", "chat_message",
}
EVERY_POSITIONAL = {"write"}
LIST_FIRST = {"tabs"}
# Markdown keywords, for the names above and for `update` (status box) and `progress` (bar text).
MARKDOWN_KEYWORDS = {"body", "label", "help", "text", "captions"}
KEYWORD_ONLY = {"update", "progress"}
NUMERIC_SPEC_END = tuple("dfFeEgGn%")


@dataclass(frozen=True)
class Violation:
    file: str
    line: int
    call: str
    argument: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.call}({self.argument}=…) gets text that is not escaped"


def _helper_call(node: ast.AST) -> bool:
    if not isinstance(node, ast.Call):
        return False
    func = node.func
    name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None
    return name in SAFE_HELPERS


def _settings_value(node: ast.AST) -> bool:
    while isinstance(node, ast.Attribute):
        if isinstance(node.value, ast.Name) and node.value.id == "settings":
            return True
        if isinstance(node.value, ast.Attribute) and node.value.attr == "settings":
            return True
        node = node.value
    return False


def _safe_interpolation(value: ast.FormattedValue) -> bool:
    inner = value.value
    if _safe(inner) or _settings_value(inner):
        return True
    if isinstance(inner, ast.Call) and isinstance(inner.func, ast.Name) and inner.func.id == "len":
        return True
    spec = value.format_spec
    if isinstance(spec, ast.JoinedStr) and all(isinstance(p, ast.Constant) for p in spec.values):
        text = "".join(str(p.value) for p in spec.values)
        return bool(text) and text.endswith(NUMERIC_SPEC_END)
    return False


def _safe(node: ast.AST | None, constants: frozenset[str] = frozenset()) -> bool:
    """Literal text, escaped text, a module constant bound to literal text, or a composition of those."""
    if node is None or isinstance(node, ast.Constant):
        return True
    if isinstance(node, ast.Name) and node.id in constants:
        return True
    if _helper_call(node):
        return True
    if isinstance(node, ast.JoinedStr):
        return all(isinstance(v, ast.Constant) or (isinstance(v, ast.FormattedValue) and _safe_interpolation(v))
                   for v in node.values)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return _safe(node.left, constants) and _safe(node.right, constants)
    if isinstance(node, ast.IfExp):
        return _safe(node.body, constants) and _safe(node.orelse, constants)
    if isinstance(node, ast.List | ast.Tuple):
        return all(_safe(e, constants) for e in node.elts)
    return False


def _literal_constants(tree: ast.Module) -> frozenset[str]:
    """Module-level names bound once to literal text (`SESSION_ENDED = "…"`)."""
    bound: dict[str, int] = {}
    literal: set[str] = set()
    for node in ast.walk(tree):
        for target in node.targets if isinstance(node, ast.Assign) else []:
            if isinstance(target, ast.Name):
                bound[target.id] = bound.get(target.id, 0) + 1
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            value = node.value
            if isinstance(value, ast.Constant) and isinstance(value.value, str):
                literal.add(node.targets[0].id)
            elif isinstance(value, ast.BinOp) and _safe(value) and not _contains_call(value):
                literal.add(node.targets[0].id)
    return frozenset(name for name in literal if bound.get(name) == 1)


def _contains_call(node: ast.AST) -> bool:
    return any(isinstance(n, ast.Call | ast.FormattedValue) for n in ast.walk(node))


def _call_name(node: ast.Call) -> str | None:
    return node.func.attr if isinstance(node.func, ast.Attribute) else None


def _dynamic_streamlit_call(node: ast.Call) -> bool:
    """`getattr(st, kind)(…)`: which element renders is decided at run time."""
    inner = node.func
    return (isinstance(inner, ast.Call) and isinstance(inner.func, ast.Name) and inner.func.id == "getattr"
            and bool(inner.args) and isinstance(inner.args[0], ast.Name) and inner.args[0].id == "st")


def violations(source: str, filename: str) -> list[Violation]:
    found: list[Violation] = []
    tree = ast.parse(source, filename)
    constants = _literal_constants(tree)
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        if _dynamic_streamlit_call(node):
            found.append(Violation(filename, node.lineno, "getattr(st, …)", "*"))
            continue
        name = _call_name(node)
        if name is None:
            continue
        checked: list[tuple[str, ast.AST]] = []
        if name in BODY_FIRST and node.args:
            checked.append(("0", node.args[0]))
        elif name in EVERY_POSITIONAL:
            checked += [(str(i), a) for i, a in enumerate(node.args)]
        elif name in LIST_FIRST and node.args:
            checked.append(("0", node.args[0]))
        if name in BODY_FIRST | EVERY_POSITIONAL | LIST_FIRST | KEYWORD_ONLY:
            checked += [(k.arg, k.value) for k in node.keywords if k.arg in MARKDOWN_KEYWORDS]
        found += [Violation(filename, node.lineno, name, arg) for arg, value in checked
                  if not _safe(value, constants)]
    return found


def test_no_unescaped_text_reaches_markdown() -> None:
    assert SOURCES and all(path.is_file() for path in SOURCES)
    found = [v for path in SOURCES for v in violations(path.read_text(encoding="utf-8"), str(path.relative_to(REPO)))]
    assert not found, "\n".join(map(str, found))


def test_the_check_catches_each_form() -> None:
    """The rule itself: every way of smuggling text in is reported, escaped text is not."""
    bad = {
        "st.markdown(name)": 1,
        "st.success(f'“{doc.title}” silindi.')": 1,
        "st.warning('x ' + title)": 1,
        "st.info('{} yüklendi'.format(name))": 1,
        "st.info('%s yüklendi' % name)": 1,
        "st.status(f'{filename} işleniyor…', expanded=True)": 1,
        "status.update(label=f'{stage}…')": 1,
        "st.toast(message)": 1,
        "st.expander(label)": 1,
        "cols[0].popover(f'{doc.title}')": 1,
        "st.subheader(name)": 1,
        "st.title(name)": 1,
        "st.caption(meta)": 1,
        "st.error(str(exc))": 1,
        "bar.progress(0.5, text=f'{stage}')": 1,
        "st.button('Sil', help=f'{doc.title} silinir')": 1,
        "st.tabs([name, 'b'])": 1,
        "st.write(name)": 1,
        "getattr(st, kind)(message)": 1,
        "st.badge(f'Üreten: {badge}')": 1,
        "MESSAGE = 'sabit'\nMESSAGE = name\nst.error(MESSAGE)": 1,  # rebound: not a constant
        "MESSAGE = f'{name}'\nst.error(MESSAGE)": 1,
    }
    for code, expected in bad.items():
        assert len(violations(code, "x.py")) == expected, code
    good = [
        "st.markdown('**Soru:** ' + escape_markdown(question))",
        "st.markdown(f'**{escape_markdown(doc.title)}**')",
        "st.success(escape_markdown(f'“{doc.title}” silindi.'))",
        "st.status(escape_markdown(f'{filename} işleniyor…'), expanded=True)",
        "status.update(label=escape_markdown(message), state='complete')",
        "st.subheader(f'Tüm dokümanlar ({len(documents)})')",
        "st.caption(f'{len(queue)} açık kayıt')",
        "st.metric('Süre', f'{ms:.0f} ms')",
        "st.markdown(highlight(source.text, question))",
        "st.markdown(escape_answer(turn.text))",
        "st.text(anything)",
        "st.code(anything)",
        "st.dataframe(frame)",
        "st.file_uploader('PDF', help=f'En fazla {ctx.settings.max_upload_mb} MB')",
        "st.info('a' if x else 'b')",
        "MESSAGE = 'Veritabanına ulaşılamıyor.'\nst.error(MESSAGE)",
        "MESSAGE = ('a ' 'b') + 'c'\nst.error(MESSAGE)",
    ]
    for code in good:
        assert violations(code, "x.py") == [], code
