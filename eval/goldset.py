"""The gold-set file format: an analyst's own questions over the company's documents (JSONL or CSV).

One question per JSONL line (docs/CONTRACTS.md "Round 2", eval/gold/README.md):
`{"id", "question", "answerable", "expected": [{"document", "article", "pages"}], "roles",
"key_facts", "notes"}`. CSV has the columns `id, question, answerable, documents, article, pages,
roles, key_facts, notes` (optional `sha256`); lists are separated by `;`, and `documents`,
`article`, `pages` and `sha256` are parallel lists, one item per expected document (an item may
be empty; pages within an item are separated by `,`, ranges as `9-11`).

A file is read whole and checked whole before anything is stored: every problem is reported
with its line and field (Turkish, for the page and the CLI alike), and a file with any problem
imports nothing. No database here: `eval.goldstore` stores what this module accepts.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from ragcore.core import ROLES, sanitize

T = TypeVar("T")

JSONL_FIELDS = ("id", "question", "answerable", "expected", "roles", "key_facts", "notes")
REQUIRED_FIELDS = ("id", "question", "answerable", "roles")
EXPECTED_FIELDS = ("document", "article", "pages", "sha256")
CSV_COLUMNS = ("id", "question", "answerable", "documents", "article", "pages", "roles", "key_facts", "notes")
CSV_OPTIONAL = ("sha256",)
TRUE_WORDS = {"evet", "e", "true", "1", "doğru", "yes"}
FALSE_WORDS = {"hayır", "hayir", "h", "false", "0", "yanlış", "no"}
MAX_QUESTION_CHARS = 1000  # the app's default MAX_QUESTION_CHARS: a longer question is refused by the app
MAX_QUESTIONS = 5000
# What one gold question may carry beside its text: an analyst's notes and facts are sentences,
# an article a heading, a document a file name. Caps keep a pasted page (or a hostile file) out
# of every lab run's tables and reports; the gold sets in eval/gold stay far below them.
MAX_NOTES_CHARS = 2000
MAX_FACT_CHARS = 300
MAX_FACTS = 20
MAX_EXPECTED = 20
MAX_ARTICLE_CHARS = 100
MAX_DOCUMENT_CHARS = 255
MAX_ERRORS_SHOWN = 20
_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,99}$")
_SHA256 = re.compile(r"^[0-9a-f]{64}$")


class GoldFormatError(ValueError):
    """A gold file with problems; `problems` lists each as "satır N, alan X: …" (Turkish)."""

    HEADER = "Doğrulama seti dosyası içe aktarılmadı; hiçbir soru eklenmedi. Sorunlar:"

    def __init__(self, problems: Sequence[str]) -> None:
        self.problems = list(problems)
        shown = self.problems[:MAX_ERRORS_SHOWN]
        more = len(self.problems) - len(shown)
        text = self.HEADER + "\n" + "\n".join(f"- {p}" for p in shown)
        if more > 0:
            text += f"\n- … ve {more} sorun daha"
        super().__init__(text)


@dataclass(frozen=True)
class Expected:
    """Where an answer is: a document (its uploaded file name), and its article label and/or pages."""

    document: str
    article: str | None = None
    pages: tuple[int, ...] = ()
    sha256: str | None = None

    def as_dict(self) -> dict:
        out: dict = {"document": self.document}
        if self.article is not None:
            out["article"] = self.article
        if self.pages:
            out["pages"] = list(self.pages)
        if self.sha256:
            out["sha256"] = self.sha256
        return out


@dataclass(frozen=True)
class GoldQuestion:
    id: str
    question: str
    answerable: bool
    expected: tuple[Expected, ...]
    roles: tuple[str, ...]
    key_facts: tuple[str, ...] = ()
    notes: str = ""

    def as_dict(self) -> dict:
        """The JSONL object, fields in the documented order."""
        return {"id": self.id, "question": self.question, "answerable": self.answerable,
                "expected": [e.as_dict() for e in self.expected], "roles": list(self.roles),
                "key_facts": list(self.key_facts), "notes": self.notes}


@dataclass
class _Row:
    """Collects the problems of one line while its fields are converted.

    `prefix` names where the fields sit when the object is nested in a larger line (a
    conversation's turn: "turns[2].").
    """

    line: int
    problems: list[str] = field(default_factory=list)
    prefix: str = ""

    def bad(self, name: str, message: str) -> None:
        self.problems.append(f"satır {self.line}, alan “{self.prefix}{name}”: {message}")


# --------------------------------------------------------------------------- field checks


def _text(row: _Row, name: str, value: object, *, required: bool, limit: int | None = None) -> str:
    if value is None:
        value = ""
    if not isinstance(value, str):
        row.bad(name, f"metin olmalı, {_kind(value)} verilmiş")
        return ""
    text = sanitize(value).strip()
    if required and not text:
        row.bad(name, "boş olamaz")
    if limit is not None and len(text) > limit:
        row.bad(name, f"en fazla {limit} karakter olabilir (şu an {len(text)})")
    return text


def _kind(value: object) -> str:
    return {bool: "doğru/yanlış", int: "sayı", float: "sayı", list: "liste", dict: "nesne",
            type(None): "boş değer"}.get(type(value), type(value).__name__)


def _id(row: _Row, value: object) -> str:
    text = _text(row, "id", value, required=True)
    if text and not _ID.match(text):
        row.bad("id", f"“{text}” geçersiz: harf, rakam, . _ : - kullanın (boşluksuz, en fazla 100 karakter)")
    return text


def _roles(row: _Row, value: object) -> tuple[str, ...]:
    if not isinstance(value, list) or not value:
        row.bad("roles", "en az bir rol içeren bir liste olmalı (ör. [\"isg\", \"personel\"])")
        return ()
    roles: list[str] = []
    for item in value:
        role = item.strip().lower() if isinstance(item, str) else None
        if role not in ROLES:
            row.bad("roles", f"bilinmeyen rol {item!r}; geçerli roller: {', '.join(ROLES)}")
        elif role not in roles:
            roles.append(role)
    return tuple(roles)


def _facts(row: _Row, value: object) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        row.bad("key_facts", "metinlerden oluşan bir liste olmalı")
        return ()
    facts = tuple(sanitize(v).strip() for v in value)
    if any(not f for f in facts):
        row.bad("key_facts", "boş bir anahtar bilgi var")
    if len(facts) > MAX_FACTS:
        row.bad("key_facts", f"en fazla {MAX_FACTS} anahtar bilgi olabilir (şu an {len(facts)})")
    if any(len(f) > MAX_FACT_CHARS for f in facts):
        row.bad("key_facts", f"bir anahtar bilgi en fazla {MAX_FACT_CHARS} karakter olabilir "
                             f"(en uzunu {max(len(f) for f in facts)})")
    return tuple(f for f in facts if f)


def _pages(row: _Row, name: str, value: object) -> tuple[int, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(p, int) and not isinstance(p, bool) for p in value):
        row.bad(name, "sayfa numaralarından oluşan bir liste olmalı (ör. [9, 10])")
        return ()
    if any(p < 1 for p in value):
        row.bad(name, "sayfa numaraları 1'den başlar")
        return ()
    return tuple(dict.fromkeys(value))


def _expected(row: _Row, value: object) -> tuple[Expected, ...]:
    if value is None:
        return ()
    if not isinstance(value, list):
        row.bad("expected", "bir liste olmalı: [{\"document\": …, \"article\": …, \"pages\": […]}]")
        return ()
    if len(value) > MAX_EXPECTED:
        row.bad("expected", f"en fazla {MAX_EXPECTED} beklenen belge olabilir (şu an {len(value)})")
        return ()
    out = []
    for n, item in enumerate(value, start=1):
        where = f"expected[{n}]"
        if not isinstance(item, dict):
            row.bad(where, "bir nesne olmalı: {\"document\": …, \"article\": …, \"pages\": […]}")
            continue
        unknown = sorted(set(item) - set(EXPECTED_FIELDS))
        if unknown:
            row.bad(where, f"bilinmeyen alan(lar): {', '.join(unknown)}; geçerli olanlar: {', '.join(EXPECTED_FIELDS)}")
        document = _text(row, f"{where}.document", item.get("document"), required=True, limit=MAX_DOCUMENT_CHARS)
        if "/" in document or "\\" in document:
            row.bad(f"{where}.document", "yalnızca dosya adı olmalı (klasör yolu olmadan)")
        article = item.get("article")
        article_text = (_text(row, f"{where}.article", article, required=False, limit=MAX_ARTICLE_CHARS)
                        if article is not None else None)
        sha = item.get("sha256")
        if sha is not None and (not isinstance(sha, str) or not _SHA256.match(sha.strip().lower())):
            row.bad(f"{where}.sha256", "64 onaltılık karakterlik bir sha256 olmalı")
            sha = None
        out.append(Expected(document, article_text or None, _pages(row, f"{where}.pages", item.get("pages")),
                            sha.strip().lower() if isinstance(sha, str) else None))
    return tuple(out)


def _consistency(row: _Row, answerable: bool, expected: tuple[Expected, ...], facts: tuple[str, ...]) -> None:
    if answerable and not expected:
        row.bad("expected", "cevaplanabilir bir soru en az bir beklenen belge göstermeli")
    if not answerable and expected:
        row.bad("expected", "cevaplanamaz (answerable: false) bir sorunun beklenen belgesi olamaz; boş bırakın")
    if not answerable and facts:
        row.bad("key_facts", "cevaplanamaz bir sorunun anahtar bilgisi olamaz; boş bırakın")


def check_fields(row: _Row, obj: dict, known: Sequence[str], required: Sequence[str]) -> None:
    """Name every unknown field of a JSONL object and every missing required one."""
    for name in (k for k in obj if k not in known):
        row.bad(name, f"bilinmeyen alan; geçerli alanlar: {', '.join(known)}")
    for name in required:
        if name not in obj:
            row.bad(name, "eksik")


def question_from_object(obj: object, line: int, prefix: str = "") -> tuple[GoldQuestion | None, list[str]]:
    """One JSONL object → (question or None, its problems); `prefix` as in `_Row`."""
    row = _Row(line, prefix=prefix)
    if not isinstance(obj, dict):
        row.problems.append(f"satır {line}: bir JSON nesnesi olmalı ({{\"id\": …, \"question\": …}}), "
                            f"{_kind(obj)} verilmiş")
        return None, row.problems
    check_fields(row, obj, JSONL_FIELDS, REQUIRED_FIELDS)
    qid = _id(row, obj.get("id"))
    question = _text(row, "question", obj.get("question"), required=True, limit=MAX_QUESTION_CHARS)
    answerable = obj.get("answerable")
    if "answerable" in obj and not isinstance(answerable, bool):
        row.bad("answerable", f"true ya da false olmalı, {_kind(answerable)} verilmiş")
    answerable = bool(answerable) if isinstance(answerable, bool) else True
    expected = _expected(row, obj.get("expected"))
    roles = _roles(row, obj.get("roles")) if "roles" in obj else ()
    facts = _facts(row, obj.get("key_facts"))
    notes = _text(row, "notes", obj.get("notes"), required=False, limit=MAX_NOTES_CHARS)
    _consistency(row, answerable, expected, facts)
    if row.problems:
        return None, row.problems
    return GoldQuestion(qid, question, answerable, expected, roles, facts, notes), []


# --------------------------------------------------------------------------- whole files


def _finish(parsed: list[tuple[int, GoldQuestion]], problems: list[str]) -> list[GoldQuestion]:
    seen: dict[str, int] = {}
    for line, q in parsed:
        if q.id in seen:
            problems.append(f"satır {line}, alan “id”: “{q.id}” satır {seen[q.id]} ile aynı; her sorunun kimliği "
                            "tek olmalı")
        else:
            seen[q.id] = line
    if not parsed and not problems:
        problems.append("dosyada hiç soru yok")
    if len(parsed) > MAX_QUESTIONS:
        problems.append(f"en fazla {MAX_QUESTIONS} soru içe aktarılabilir (dosyada {len(parsed)})")
    if problems:
        raise GoldFormatError(problems)
    return [q for _, q in parsed]


def parse_lines(text: str, from_object: Callable[[object, int], tuple[T | None, list[str]]]
                ) -> tuple[list[tuple[int, T]], list[str]]:
    """Every JSONL line read by `from_object` (a gold question's, a conversation's): the records
    with their line numbers, and the problems of every line, each named by line and field."""
    parsed: list[tuple[int, T]] = []
    problems: list[str] = []
    for line, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip():
            continue
        try:
            obj = json.loads(raw)
        except json.JSONDecodeError as exc:
            problems.append(f"satır {line}: geçerli bir JSON değil ({exc.msg}, sütun {exc.colno})")
            continue
        record, found = from_object(obj, line)
        problems += found
        if record is not None:
            parsed.append((line, record))
    return parsed, problems


def parse_jsonl(text: str) -> list[GoldQuestion]:
    """Every question of a JSONL gold file, or GoldFormatError naming each bad line and field."""
    return _finish(*parse_lines(text, question_from_object))


def _split(value: str, sep: str = ";") -> list[str]:
    return [part.strip() for part in value.split(sep)]


def _csv_pages(row: _Row, item: str) -> list[int] | None:
    pages: list[int] = []
    for part in (p.strip() for p in item.split(",")):
        if not part:
            continue
        lo, dash, hi = part.partition("-")
        if not lo.strip().isdigit() or (dash and not hi.strip().isdigit()):
            row.bad("pages", f"“{part}” bir sayfa numarası değil (ör. 9 ya da 9,10 ya da 9-11)")
            return None
        first, last = int(lo), int(hi) if dash else int(lo)
        if last < first or last - first > 500:
            row.bad("pages", f"“{part}” geçersiz bir sayfa aralığı")
            return None
        pages.extend(range(first, last + 1))
    return pages


def _parallel(row: _Row, name: str, value: str, count: int) -> list[str] | None:
    items = _split(value) if value.strip() else []
    if not items:
        return [""] * count
    if len(items) == 1 and count == 1:
        return items
    if len(items) != count:
        row.bad(name, f"{len(items)} öğe var, “documents” ise {count} belge gösteriyor; her belge için bir öğe "
                      "yazın (boş olabilir), “;” ile ayırarak")
        return None
    return items


def _csv_object(record: dict[str, str], line: int) -> tuple[dict | None, list[str]]:
    """A CSV record → the equivalent JSONL object (so both formats share every check)."""
    row = _Row(line)
    flag = (record.get("answerable") or "").strip().lower()
    if flag in TRUE_WORDS:
        answerable: object = True
    elif flag in FALSE_WORDS:
        answerable = False
    else:
        row.bad("answerable", f"“{record.get('answerable') or ''}” anlaşılmadı; evet/hayır ya da true/false yazın")
        answerable = True
    documents = [d for d in _split(record.get("documents") or "") if d]
    articles = _parallel(row, "article", record.get("article") or "", max(len(documents), 1))
    pages = _parallel(row, "pages", record.get("pages") or "", max(len(documents), 1))
    shas = _parallel(row, "sha256", record.get("sha256") or "", max(len(documents), 1))
    expected = []
    if documents and articles is not None and pages is not None and shas is not None:
        for n, document in enumerate(documents):
            entry: dict[str, object] = {"document": document}
            if articles[n]:
                entry["article"] = articles[n]
            page_list = _csv_pages(row, pages[n])
            if page_list:
                entry["pages"] = page_list
            if shas[n]:
                entry["sha256"] = shas[n]
            expected.append(entry)
    elif not documents and any(v.strip() for v in (record.get("article") or "", record.get("pages") or "")):
        row.bad("documents", "makale ya da sayfa verilmiş ama belge adı yok")
    obj = {
        "id": record.get("id") or "",
        "question": record.get("question") or "",
        "answerable": answerable,
        "expected": expected,
        "roles": [r for r in _split(record.get("roles") or "") if r],
        "key_facts": [f for f in _split(record.get("key_facts") or "") if f],
        "notes": record.get("notes") or "",
    }
    return (None if row.problems else obj), row.problems


def parse_csv(text: str) -> list[GoldQuestion]:
    """Every question of a CSV gold file (comma-separated, header row), or GoldFormatError."""
    reader = csv.DictReader(io.StringIO(text))
    header = [h.strip() for h in (reader.fieldnames or [])]
    if not header:
        raise GoldFormatError(["satır 1: başlık satırı yok; ilk satır sütun adlarını içermeli: "
                               + ", ".join(CSV_COLUMNS)])
    if len(header) == 1 and ";" in header[0]:
        raise GoldFormatError(["satır 1: sütunlar “;” ile ayrılmış; CSV'de sütunlar virgülle ayrılır "
                               "(“;” liste öğelerini ayırır)"])
    missing = [c for c in CSV_COLUMNS if c not in header]
    unknown = [c for c in header if c not in CSV_COLUMNS + CSV_OPTIONAL]
    problems = []
    if missing:
        problems.append(f"satır 1: eksik sütun(lar): {', '.join(missing)}")
    if unknown:
        problems.append(f"satır 1: bilinmeyen sütun(lar): {', '.join(unknown)}; geçerli sütunlar: "
                        + ", ".join(CSV_COLUMNS + CSV_OPTIONAL))
    if problems:
        raise GoldFormatError(problems)
    reader.fieldnames = header
    parsed: list[tuple[int, GoldQuestion]] = []
    start = 2
    for record in reader:
        line = start
        start = reader.line_num + 1
        if None in record:  # more cells than columns
            problems.append(f"satır {line}: başlıktakinden fazla hücre var ({len(header)} sütun bekleniyordu)")
            continue
        if not any((v or "").strip() for v in record.values()):
            continue
        obj, found = _csv_object(record, line)
        problems += found
        if obj is not None:
            question, found = question_from_object(obj, line)
            problems += found
            if question is not None:
                parsed.append((line, question))
    return _finish(parsed, problems)


def decode(data: bytes) -> str:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise GoldFormatError([f"dosya UTF-8 değil (bayt {exc.start}); UTF-8 olarak kaydedin"]) from None


def parse_file(name: str, data: bytes) -> list[GoldQuestion]:
    """A gold file by its name: `.csv` is CSV, `.jsonl`/`.json` (or a first character “{”) JSONL."""
    text = decode(data)
    suffix = Path(name).suffix.lower()
    if suffix == ".csv":
        return parse_csv(text)
    if suffix in (".jsonl", ".json", ".ndjson") or text.lstrip().startswith("{"):
        return parse_jsonl(text)
    raise GoldFormatError([f"“{name}”: biçim anlaşılmadı; .jsonl ya da .csv uzantılı bir dosya yükleyin"])


# --------------------------------------------------------------------------- writing


def to_jsonl(questions: Iterable[GoldQuestion]) -> str:
    return "".join(json.dumps(q.as_dict(), ensure_ascii=False) + "\n" for q in questions)


def _pages_text(pages: Sequence[int]) -> str:
    return ",".join(str(p) for p in pages)


def to_csv(questions: Iterable[GoldQuestion]) -> str:
    """The CSV form; `parse_csv(to_csv(qs)) == qs`."""
    out = io.StringIO()
    questions = list(questions)
    with_sha = any(e.sha256 for q in questions for e in q.expected)
    columns = CSV_COLUMNS + (CSV_OPTIONAL if with_sha else ())
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(columns)
    for q in questions:
        cells = [q.id, q.question, "evet" if q.answerable else "hayır",
                 ";".join(e.document for e in q.expected),
                 ";".join(e.article or "" for e in q.expected) if any(e.article for e in q.expected) else "",
                 ";".join(_pages_text(e.pages) for e in q.expected) if any(e.pages for e in q.expected) else "",
                 ";".join(q.roles), ";".join(q.key_facts), q.notes]
        if with_sha:
            cells.append(";".join(e.sha256 or "" for e in q.expected))
        writer.writerow(cells)
    return out.getvalue()


def fingerprint(questions: Iterable[GoldQuestion]) -> str:
    """sha256 of the JSONL form: the data fingerprint of a gold-set version on a run card."""
    return hashlib.sha256(to_jsonl(questions).encode("utf-8")).hexdigest()


def parse_pages(text: str) -> tuple[int, ...]:
    """"9" / "9,10" / "9-11" (the CSV form) → page numbers; GoldFormatError with a Turkish message."""
    row = _Row(1)
    pages = _csv_pages(row, text or "")
    if pages is None:
        raise GoldFormatError([p.removeprefix("satır 1, ") for p in row.problems])
    return tuple(dict.fromkeys(pages))
