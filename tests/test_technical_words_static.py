"""Static check: our identifiers stay inside "Teknik ayrıntılar".

Pages say things in plain Turkish; model ids, file names, settings (DOCUMENTS_DIR), metric codes
(Recall@5, p95), method and data-set codes (BM25, RRF, TQuAD, bootstrap) and commands are shown
only under `ui.technical`'s expander. This test parses `app.py`, `ui/` and `pages/` and reads the
literal text of every label and body a Streamlit call shows (the calls
tests/test_plain_text_static.py knows, plus `st.text` and the lab's `download`), the module
constants such text names, the option names a `format_func` lambda maps to, and the values of
module-level `*_LABELS` / `*_NAMES` tables, a table's column names (`st.column_config.*Column`
labels, and the keys of the rows given to `table`, `st.dataframe`, `pd.DataFrame`) — a raw run
folder is no column outside the technical block either. It does not read `help=` texts (the code
behind a plain name belongs there: "… (MRR@10)"), text under `with technical_expander():`, or
what is given to `technical_details(…)`. Text made at run time (a model name from the settings)
is the browser test's word walk's (tests/test_browser.py).

The lab's HTML report (eval/gold_report.py) is a page too: its literal HTML text, outside what
goes to its own "Teknik ayrıntılar" block (`_technical(…)`), is read the same way.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

from tests.test_plain_text_static import BODY_FIRST, LIST_FIRST, REPO, SOURCES

SHOWN_KEYWORDS = {"body", "label", "text", "placeholder", "captions"}
COLUMNS = {"Column", "TextColumn", "NumberColumn", "CheckboxColumn", "SelectboxColumn", "DatetimeColumn", "DateColumn",
           "TimeColumn", "ListColumn", "LinkColumn", "ImageColumn", "LineChartColumn", "BarChartColumn",
           "ProgressColumn"}
CALLS = BODY_FIRST | LIST_FIRST | COLUMNS | {"text", "download"}
# Calls whose first argument is rows of a table: the rows' keys are its column names.
TABLE_CALLS = {"table", "dataframe", "data_editor", "DataFrame"}
TABLES = re.compile(r"_?[A-Z_]*(LABELS|NAMES)$")
IDENTIFIERS = {
    "a setting": r"\b[A-Z][A-Z0-9]*_[A-Z0-9_]+\b",
    "a metric code": r"(?i)\b(recall|mrr|ndcg)\b|\w@(\d+|k)\b|\bp(50|95)\b",
    "a method or data-set code": r"(?i)\b(bm25|rrf|hnsw|tquad|bootstrap|production|paraphrase|holm)\b",
    "a file name": r"\b[\w-]+\.(json|jsonl|csv|md|py)\b",
    "a path": r"\b\w+/\w+/",
    "a model id": r"(?i)e5-small|multilingual-e5|universal sentence|sentence encoder",
    "a command": r"python -m|ollama pull|docker compose",
    "an English lab word": r"\b(train|dev)\b",
    "a folder name": r"^Klasör\b",
}


@dataclass(frozen=True)
class Finding:
    file: str
    line: int
    what: str
    text: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.what} outside “Teknik ayrıntılar”: {self.text!r}"


def _module_text(tree: ast.Module) -> dict[str, ast.AST]:
    return {node.targets[0].id: node.value for node in tree.body
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)}


def _pieces(node: ast.AST | None, constants: dict[str, ast.AST]) -> list[str]:
    """The literal parts of the text an expression shows (not the keys it looks values up with)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, ast.JoinedStr):
        return [str(v.value) for v in node.values if isinstance(v, ast.Constant)]
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return _pieces(node.left, constants) + _pieces(node.right, constants)
    if isinstance(node, ast.IfExp):
        return _pieces(node.body, constants) + _pieces(node.orelse, constants)
    if isinstance(node, ast.List | ast.Tuple):
        return [p for e in node.elts for p in _pieces(e, constants)]
    if isinstance(node, ast.Name) and node.id in constants and not isinstance(constants[node.id], ast.Dict):
        return _pieces(constants[node.id], constants)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "escape_markdown" and node.args:
        return _pieces(node.args[0], constants)
    return []


def _options(node: ast.AST, constants: dict[str, ast.AST]) -> list[str]:
    """What a `format_func` lambda maps options to: the values of the dicts in it."""
    if not isinstance(node, ast.Lambda):
        return []
    return [p for d in ast.walk(node.body) if isinstance(d, ast.Dict) for v in d.values for p in _pieces(v, constants)]


def _technical_block(node: ast.With) -> bool:
    for item in node.items:
        call = item.context_expr
        if isinstance(call, ast.Call):
            name = call.func.attr if isinstance(call.func, ast.Attribute) else getattr(call.func, "id", None)
            if name == "technical_expander":
                return True
            if name == "expander" and call.args and _pieces(call.args[0], {}) == ["Teknik ayrıntılar"]:
                return True
    return False


def _shown_calls(node: ast.AST) -> list[ast.Call]:
    """Calls outside the technical blocks."""
    if isinstance(node, ast.With) and _technical_block(node):
        return []
    found = [node] if isinstance(node, ast.Call) else []
    for child in ast.iter_child_nodes(node):
        found += _shown_calls(child)
    return found


def _logger(func: ast.AST) -> bool:
    """`log.warning(…)`: a log line (English is fine there), not a Streamlit alert."""
    return isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id in {"log", "logger",
                                                                                                    "logging"}


def _assigned(tree: ast.Module) -> dict[str, list[ast.AST]]:
    """Every value a name is given anywhere in the module (a function's `rows = [...]` too)."""
    found: dict[str, list[ast.AST]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    found.setdefault(target.id, []).append(node.value)
    return found


def _column_names(node: ast.AST, assigned: dict[str, list[ast.AST]], constants: dict[str, ast.AST]) -> list[str]:
    """The keys of the row dicts in a table's data (a list, a comprehension, a name given one)."""
    values = assigned.get(node.id, []) if isinstance(node, ast.Name) else [node]
    return [p for value in values for d in ast.walk(value) if isinstance(d, ast.Dict)
            for k in d.keys if k is not None for p in _pieces(k, constants)]


def findings(source: str, filename: str) -> list[Finding]:
    tree = ast.parse(source, filename)
    constants = _module_text(tree)
    assigned = _assigned(tree)
    texts: list[tuple[int, str]] = []
    for name, value in constants.items():
        if TABLES.fullmatch(name) and isinstance(value, ast.Dict):
            texts += [(value.lineno, p) for v in value.values for p in _pieces(v, constants)]
    for call in _shown_calls(tree):
        func = call.func
        name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
        if name in TABLE_CALLS and call.args:
            texts += [(call.lineno, p) for p in _column_names(call.args[0], assigned, constants)]
        if name not in CALLS or _logger(func):
            continue
        shown = ([call.args[0]] if call.args else []) + [k.value for k in call.keywords if k.arg in SHOWN_KEYWORDS]
        texts += [(call.lineno, p) for node in shown for p in _pieces(node, constants)]
        texts += [(call.lineno, p) for k in call.keywords if k.arg == "format_func" for p in _options(k.value, constants)]
    return [Finding(filename, line, what, text) for line, text in texts
            for what, pattern in IDENTIFIERS.items() if re.search(pattern, text)]


REPORT = REPO / "eval" / "gold_report.py"
HTML_TEXT = re.compile(r"<(p|h[1-6]|li|td|th|summary|div|title|strong|pre)\b")


def _html_pieces(node: ast.AST, constants: dict[str, ast.AST]) -> list[str]:
    """An HTML template's literal text: its constant parts and the module constants put into it
    (`{NOTE}`, `{html.escape(NOTE)}`)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    pieces: list[str] = []
    for value in node.values if isinstance(node, ast.JoinedStr) else []:
        if isinstance(value, ast.Constant):
            pieces.append(str(value.value))
            continue
        inner = value.value
        if isinstance(inner, ast.Call) and isinstance(inner.func, ast.Attribute) and inner.func.attr == "escape" \
                and inner.args:
            inner = inner.args[0]
        if isinstance(inner, ast.Name) and inner.id in constants:
            pieces += _pieces(constants[inner.id], constants)
    return pieces


def report_findings(source: str, filename: str) -> list[Finding]:
    """Identifiers in the report's HTML text outside its technical block (`_technical(…)`)."""
    tree = ast.parse(source, filename)
    constants = _module_text(tree)
    technical = {id(n) for call in ast.walk(tree) if isinstance(call, ast.Call)
                 and getattr(call.func, "id", None) == "_technical" for n in ast.walk(call)}
    texts: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if id(node) in technical or not isinstance(node, ast.JoinedStr | ast.Constant):
            continue
        pieces = _html_pieces(node, constants)
        if any(HTML_TEXT.search(p) for p in pieces):
            texts += [(node.lineno, re.sub(r"<[^>]*>", " ", p)) for p in pieces]
    return [Finding(filename, line, what, text) for line, text in texts
            for what, pattern in IDENTIFIERS.items() if re.search(pattern, text)]


def test_the_lab_report_names_methods_only_in_its_technical_block() -> None:
    found = report_findings(REPORT.read_text(encoding="utf-8"), str(REPORT.relative_to(REPO)))
    assert not found, "\n".join(map(str, found))


def test_the_report_check_catches_prose_and_skips_the_technical_block() -> None:
    bad = [
        "def f(x):\n    return f'<p>Fark; %95 eşli bootstrap güven aralığı; p: Holm düzeltmeli. {x}</p>'",
        "NOTE = 'p değerleri Holm yöntemiyle'\ndef f():\n    return f'<p>{html.escape(NOTE)}</p>'",
        "def f(rows):\n    return f'<h2>BM25 sonuçları</h2>{rows}'",
    ]
    for code in bad:
        assert report_findings(code, "x.py"), code
    good = [
        "METHOD = 'eşli bootstrap; Holm'\ndef f():\n    return _technical([('Yöntem', METHOD)])",
        "def f(x):\n    return f'<p>Her yapılandırma en iyisiyle karşılaştırılır. {x}</p>'",
        "KEYS = {'bootstrap_resamples': 1000}",  # a summary.json key, no HTML
    ]
    for code in good:
        assert report_findings(code, "x.py") == [], (code, report_findings(code, "x.py"))


def test_identifiers_stay_in_technical_details() -> None:
    found = [f for path in SOURCES for f in findings(path.read_text(encoding="utf-8"), str(path.relative_to(REPO)))]
    assert not found, "\n".join(map(str, found))


def test_the_check_catches_each_form() -> None:
    """The rule itself: every place an identifier can reach a reader is reported; help texts and
    the technical block are not."""
    bad = [
        "st.radio('Belgeler', ['a'], format_func=lambda x: {'a': 'Örnek kanunlar (DOCUMENTS_DIR)'}[x])",
        "st.selectbox('Ölçü', m, format_func=lambda m: {'r': 'Recall@5'}[m])",
        "st.text(f'Derlem: {n} makale ({k} train makalesi dışlandı)')",
        "st.expander('Karşılaştırmalar (bootstrap GA, Holm)')",
        "NAME = 'BM25 skoru'\nst.metric(NAME, 1)",
        "download('summary.json', path, name, mime, key)",
        "st.tabs(['Setler', 'TQuAD'])",
        "EMBEDDER_LABELS = {'use': 'USE (universal sentence encoder)'}",
        "st.caption(escape_markdown(f'Arama p50 / p95: {x}'))",
        "st.caption('ölçüm: ragcore/measured/retrieval.json')",
        "st.warning('sunucuda `python -m ragcore worker` çalıştırın')",
        "st.multiselect('Yöntemler', names, default=['production'], placeholder='production seçin')",
        "C = {'BM25': st.column_config.TextColumn('BM25', help='Sözcük eşleşmesi skoru')}",
        "def f(runs):\n    rows = [{'Çalıştırma': r.label, 'Klasör': r.folder} for r in runs]\n    table(rows, key='k')",
        "st.dataframe(pd.DataFrame([{'RRF skoru': 1}]))",
    ]
    for code in bad:
        assert findings(code, "x.py"), code
    good = [
        "with technical_expander():\n    st.caption('EMBED_BACKEND=use · ragcore/measured/retrieval.json')",
        "with st.expander('Teknik ayrıntılar'):\n    st.text('TQuAD v0.1 dev')",
        "technical_details([('Ayar', 'DOCUMENTS_DIR'), ('Komut', 'python -m ragcore worker')])",
        "st.selectbox('Birincil ölçü', m, format_func=metric_label, help='Doğru parçanın sırası (MRR@10)')",
        "st.text(f\"Soru: {case['question']} · {row['excluded_train']}\")",
        "st.caption(\"İlk 5'te bulma oranı · ortanca / en yavaş %5\")",
        "EMBEDDER_IDS = {'e5': 'multilingual-e5-small'}",
        "st.file_uploader('Doğrulama seti dosyası (JSONL ya da CSV)')",
        "log.warning('EMBED_BACKEND=%s is unusable (see SECURITY.md)', x)",
        "C = {'Sözcük': st.column_config.TextColumn('Sözcük', help='Sözcük eşleşmesi skoru (BM25)')}",
        "with technical_expander():\n    table([{'Tarih': d, 'Klasör': f}], key='k')",
    ]
    for code in good:
        assert findings(code, "x.py") == [], (code, findings(code, "x.py"))
