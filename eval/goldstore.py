"""Gold sets in the database (eval/migrations/001): import, versions and their history, export, and
questions added from the review queue.

Every change makes a new version in one transaction: the set row is locked, the new content is
compared with the current version (added, removed, changed questions by id), and the version
row records who, when and what changed. A version is never edited afterwards, so a run that
measured "paraphrase v3" can always be reproduced and its card's fingerprint checked.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import psycopg
from psycopg.types.json import Jsonb

from eval.goldset import (
    Expected,
    GoldFormatError,
    GoldQuestion,
    fingerprint,
    parse_file,
    question_from_object,
)
from ragcore.core import sanitize
from ragcore.store import Database

SAMPLE_NAME = "örnek: kanun soruları"  # was "örnek: kanun paraphrase" (an English word on the lab page)
SAMPLE_FILE = Path(__file__).resolve().parent / "gold" / "paraphrase_laws.jsonl"
SAMPLE_CORPUS = Path(__file__).resolve().parent / "gold" / "paraphrase_laws.corpus.json"
MAX_NAME = 200

_LIVE_AT = "q.added_in <= %(version)s AND (q.removed_in IS NULL OR q.removed_in > %(version)s)"
QUESTIONS_SQL = f"""
SELECT q.qid, q.question, q.answerable, q.expected, q.roles, q.key_facts, q.notes
FROM public.gold_questions q
WHERE q.gold_set_id = %(set)s AND {_LIVE_AT}
ORDER BY q.position, q.id"""
VERSION_SQL = """
SELECT s.id, s.name, v.version, v.created_by, v.created_at, v.change, v.source, v.question_count, v.sha256
FROM public.gold_sets s JOIN public.gold_set_versions v ON v.gold_set_id = s.id"""
LIST_SQL = """
SELECT DISTINCT ON (s.id) s.id, s.name, v.version, v.created_by, v.created_at, v.change, v.source,
       v.question_count, v.sha256,
       (SELECT count(*) FROM public.gold_questions q WHERE q.gold_set_id = s.id AND q.answerable
          AND q.added_in <= v.version AND (q.removed_in IS NULL OR q.removed_in > v.version))
FROM public.gold_sets s JOIN public.gold_set_versions v ON v.gold_set_id = s.id
ORDER BY s.id, v.version DESC"""


class GoldSetError(ValueError):
    """A gold-set request that cannot be carried out; the message is Turkish."""


@dataclass(frozen=True)
class GoldVersion:
    """One version of a gold set, as its history and a run card show it."""

    set_id: int
    name: str
    version: int
    created_by: str | None
    created_at: datetime
    change: str
    source: str
    question_count: int
    sha256: str
    answerable: int | None = None

    def as_dict(self) -> dict:
        return {"id": self.set_id, "name": self.name, "version": self.version, "created_by": self.created_by,
                "created_at": self.created_at.isoformat(), "change": self.change, "source": self.source,
                "questions": self.question_count, "sha256": self.sha256}


def _version(row: tuple) -> GoldVersion:
    return GoldVersion(*row)


def _question(row: tuple) -> GoldQuestion:
    expected = row[3] if isinstance(row[3], list) else json.loads(row[3] or "[]")
    return GoldQuestion(
        id=row[0], question=row[1], answerable=row[2],
        expected=tuple(Expected(e["document"], e.get("article"), tuple(e.get("pages", ())), e.get("sha256"))
                       for e in expected),
        roles=tuple(row[4]), key_facts=tuple(row[5] or ()), notes=row[6] or "")


def _clean_name(name: str) -> str:
    text = sanitize(name or "", single_line=True).strip()
    if not text:
        raise GoldSetError("Doğrulama setinin bir adı olmalı.")
    if len(text) > MAX_NAME:
        raise GoldSetError(f"Doğrulama seti adı en fazla {MAX_NAME} karakter olabilir.")
    return text


# --------------------------------------------------------------------------- reading


def list_sets(db: Database) -> list[GoldVersion]:
    """Every gold set at its newest version (with its answerable count), by name."""
    with db.connection() as conn:
        rows = conn.execute(LIST_SQL).fetchall()
    return sorted((GoldVersion(*row) for row in rows), key=lambda v: v.name.casefold())


def find_set(db: Database, name_or_id: str | int) -> int:
    """The set id for a name (or an id given as a number)."""
    with db.connection() as conn:
        if isinstance(name_or_id, int):
            row = conn.execute("SELECT id FROM public.gold_sets WHERE id = %s", (name_or_id,)).fetchone()
        else:
            row = conn.execute("SELECT id FROM public.gold_sets WHERE name = %s", (_clean_name(name_or_id),)).fetchone()
    if row is None:
        raise GoldSetError(f"“{name_or_id}” adlı bir doğrulama seti yok.")
    return row[0]


def get_version(db: Database, set_id: int, version: int | None = None) -> GoldVersion:
    """A version of a set (None: the newest)."""
    with db.connection() as conn:
        if version is None:
            row = conn.execute(VERSION_SQL + " WHERE s.id = %s ORDER BY v.version DESC LIMIT 1", (set_id,)).fetchone()
        else:
            row = conn.execute(VERSION_SQL + " WHERE s.id = %s AND v.version = %s", (set_id, version)).fetchone()
    if row is None:
        raise GoldSetError(f"Doğrulama seti #{set_id} için {'hiç sürüm' if version is None else f'{version}. sürüm'} yok.")
    return _version(row)


def questions(db: Database, set_id: int, version: int | None = None) -> tuple[GoldVersion, list[GoldQuestion]]:
    """The version and its questions in file order."""
    found = get_version(db, set_id, version)
    with db.connection() as conn:
        rows = conn.execute(QUESTIONS_SQL, {"set": set_id, "version": found.version}).fetchall()
    return found, [_question(row) for row in rows]


def history(db: Database, set_id: int) -> list[GoldVersion]:
    """Every version of a set, newest first."""
    with db.connection() as conn:
        rows = conn.execute(VERSION_SQL + " WHERE s.id = %s ORDER BY v.version DESC", (set_id,)).fetchall()
    return [_version(row) for row in rows]


# --------------------------------------------------------------------------- writing


def _live(conn: psycopg.Connection, set_id: int) -> dict[str, tuple[int, GoldQuestion, int]]:
    rows = conn.execute(
        """SELECT id, position, qid, question, answerable, expected, roles, key_facts, notes
           FROM public.gold_questions WHERE gold_set_id = %s AND removed_in IS NULL ORDER BY position, id""",
        (set_id,)).fetchall()
    return {row[2]: (row[0], _question(row[2:]), row[1]) for row in rows}


def _insert_question(conn: psycopg.Connection, set_id: int, version: int, position: int, q: GoldQuestion,
                     source_question_id: int | None = None) -> None:
    conn.execute(
        """INSERT INTO public.gold_questions (gold_set_id, qid, position, added_in, question, answerable, expected,
                                             roles, key_facts, notes, source_question_id)
           VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)""",
        (set_id, q.id, position, version, q.question, q.answerable, Jsonb([e.as_dict() for e in q.expected]),
         list(q.roles), list(q.key_facts), q.notes, source_question_id))


def _lock_or_create(conn: psycopg.Connection, name: str, created_by: str | None) -> tuple[int, int]:
    """(set id, its newest version or 0), the set row locked until commit."""
    conn.execute("INSERT INTO public.gold_sets (name, created_by) VALUES (%s, %s) ON CONFLICT (name) DO NOTHING",
                 (name, created_by))
    set_id = conn.execute("SELECT id FROM public.gold_sets WHERE name = %s FOR UPDATE", (name,)).fetchone()[0]
    current = conn.execute("SELECT coalesce(max(version), 0) FROM public.gold_set_versions WHERE gold_set_id = %s",
                           (set_id,)).fetchone()[0]
    return set_id, current


def _record_version(conn: psycopg.Connection, set_id: int, version: int, *, created_by: str | None, change: str,
                    source: str) -> None:
    rows = conn.execute(QUESTIONS_SQL, {"set": set_id, "version": version}).fetchall()
    content = [_question(row) for row in rows]
    conn.execute(
        """INSERT INTO public.gold_set_versions (gold_set_id, version, created_by, change, source, question_count, sha256)
           VALUES (%s, %s, %s, %s, %s, %s, %s)""",
        (set_id, version, created_by, change, source, len(content), fingerprint(content)))


def _describe(added: int, removed: int, changed: int, kept: int) -> str:
    parts = [f"{n} soru {what}" for n, what in ((added, "eklendi"), (removed, "çıkarıldı"), (changed, "değişti"))
             if n]
    return ", ".join(parts) + (f"; {kept} soru aynı kaldı" if kept else "")


def import_questions(db: Database, name: str, new: Sequence[GoldQuestion], *, created_by: str | None,
                     source: str) -> tuple[GoldVersion, bool]:
    """Make `new` the content of the set `name` (created if missing) as a new version.

    Returns (the version, whether it is new): importing the same content again adds no version.
    """
    name = _clean_name(name)
    if not new:
        raise GoldSetError("İçe aktarılacak soru yok.")
    with db.connection() as conn:
        set_id, current = _lock_or_create(conn, name, created_by)
        live = _live(conn, set_id)
        incoming = {q.id: q for q in new}
        removed = [qid for qid in live if qid not in incoming]
        changed = {qid for qid, q in incoming.items() if qid in live and live[qid][1] != q}
        added = {qid for qid in incoming if qid not in live}
        if not (removed or changed or added) and current:
            return get_version_conn(conn, set_id, current), False
        version = current + 1
        for qid in [*removed, *changed]:
            conn.execute("UPDATE public.gold_questions SET removed_in = %s WHERE id = %s", (version, live[qid][0]))
        # Positions of earlier versions never change (their export stays byte-identical): a changed
        # question keeps its place, new ones follow the last one in the order of the file.
        after = max((p for _, _, p in live.values()), default=-1) + 1
        for q in new:
            if q.id in changed:
                _insert_question(conn, set_id, version, live[q.id][2], q)
            elif q.id in added:
                _insert_question(conn, set_id, version, after, q)
                after += 1
        kept = len(incoming) - len(added) - len(changed)
        change = _describe(len(added), len(removed), len(changed), kept) if current else f"{len(new)} soru ile oluşturuldu"
        _record_version(conn, set_id, version, created_by=created_by, change=change, source=source)
        return get_version_conn(conn, set_id, version), True


def get_version_conn(conn: psycopg.Connection, set_id: int, version: int) -> GoldVersion:
    row = conn.execute(VERSION_SQL + " WHERE s.id = %s AND v.version = %s", (set_id, version)).fetchone()
    return _version(row)


def import_file(db: Database, name: str, filename: str, data: bytes, *, created_by: str | None
                ) -> tuple[GoldVersion, bool]:
    """Parse a JSONL/CSV gold file (GoldFormatError naming each bad line) and import it whole."""
    return import_questions(db, name, parse_file(filename, data), created_by=created_by,
                            source=sanitize(Path(filename).name, single_line=True) or "dosya")


def import_sample(db: Database, *, created_by: str | None = None) -> tuple[GoldVersion, bool]:
    """The shipped paraphrase set (eval/gold/paraphrase_laws.jsonl) as the set “örnek: kanun soruları”."""
    version, new = import_file(db, SAMPLE_NAME, SAMPLE_FILE.name, SAMPLE_FILE.read_bytes(), created_by=created_by)
    return version, new


def import_everyday(db: Database, half: str, *, created_by: str | None = None) -> tuple[GoldVersion, bool]:
    """A half of the shipped everyday-question development set (eval/gold/everyday_laws.jsonl,
    split by eval.gold_split) as the set “günlük sorular (<half>)”: tune on train, choose on dev."""
    from eval.gold_split import everyday_split

    halves = everyday_split()
    if half not in halves:
        raise GoldSetError(f"Bilinmeyen yarı: {half!r}; {', '.join(halves)} olabilir.")
    return import_questions(db, f"günlük sorular ({half})", halves[half], created_by=created_by,
                            source=f"everyday_laws.jsonl ({half}, seed 0)")


def add_question(db: Database, set_id: int, question: GoldQuestion, *, created_by: str | None, source: str,
                 source_question_id: int | None = None) -> GoldVersion:
    """Append one question to a set as a new version (its id must be new in the set)."""
    with db.connection() as conn:
        row = conn.execute("SELECT name FROM public.gold_sets WHERE id = %s FOR UPDATE", (set_id,)).fetchone()
        if row is None:
            raise GoldSetError(f"Doğrulama seti #{set_id} yok.")
        live = _live(conn, set_id)
        if question.id in live:
            raise GoldSetError(f"“{row[0]}” setinde “{question.id}” kimlikli bir soru zaten var.")
        current = conn.execute("SELECT coalesce(max(version), 0) FROM public.gold_set_versions WHERE gold_set_id = %s",
                               (set_id,)).fetchone()[0]
        version = current + 1
        position = max((p for _, _, p in live.values()), default=-1) + 1
        _insert_question(conn, set_id, version, position, question, source_question_id)
        _record_version(conn, set_id, version, created_by=created_by, change=f"“{question.id}” eklendi ({source})",
                        source=source)
        return get_version_conn(conn, set_id, version)


# --------------------------------------------------------------------------- from the review queue


@dataclass(frozen=True)
class ReviewMark:
    """What the admin says about a review-queue question: where the answer is, or that none is."""

    question_id: int
    gold_set: str  # name of an existing set, or of a new one
    unanswerable: bool = False
    document: str | None = None  # file name of an ingested document
    pages: tuple[int, ...] = ()
    article: str | None = None
    key_facts: tuple[str, ...] = ()


def review_gold_id(question_id: int) -> str:
    return f"inceleme-{question_id}"


def add_from_review(db: Database, mark: ReviewMark, *, created_by: str) -> GoldVersion:
    """Turn a review-queue question into a gold question of `mark.gold_set` (a new version).

    The question text and the asking role come from the questions log; an answerable mark must
    name a document that role can read, so the next run can find it.
    """
    with db.connection() as conn:
        row = conn.execute("SELECT question, role, username, created_at FROM questions WHERE id = %s",
                           (mark.question_id,)).fetchone()
    if row is None:
        raise GoldSetError(f"Soru #{mark.question_id} kayıtlarda yok.")
    text, role, username, asked = row
    expected: list[dict] = []
    if not mark.unanswerable:
        if not mark.document:
            raise GoldSetError("Doğru belgeyi seçin ya da “bizim dokümanlarımızda yok” deyin.")
        _check_readable(db, mark.document, role)
        entry: dict = {"document": mark.document}
        if mark.article:
            entry["article"] = mark.article
        if mark.pages:
            entry["pages"] = list(mark.pages)
        expected.append(entry)
    obj = {"id": review_gold_id(mark.question_id), "question": text, "answerable": not mark.unanswerable,
           "expected": expected, "roles": [role], "key_facts": list(mark.key_facts),
           "notes": f"İnceleme kuyruğundan: soru #{mark.question_id}, {username}, "
                    f"{asked.astimezone().strftime('%d.%m.%Y')}"}
    question, problems = question_from_object(obj, 1)
    if question is None:
        raise GoldSetError("; ".join(p.removeprefix("satır 1, ") for p in problems))
    name = _clean_name(mark.gold_set)
    with db.connection() as conn:
        set_id, current = _lock_or_create(conn, name, created_by)
        if current == 0:  # a new set: its first version holds only this question
            _insert_question(conn, set_id, 1, 0, question, mark.question_id)
            _record_version(conn, set_id, 1, created_by=created_by, change=f"inceleme #{mark.question_id} ile oluşturuldu",
                            source=f"inceleme #{mark.question_id}")
            return get_version_conn(conn, set_id, 1)
    return add_question(db, set_id, question, created_by=created_by, source=f"inceleme #{mark.question_id}",
                        source_question_id=mark.question_id)


def _check_readable(db: Database, filename: str, role: str) -> None:
    with db.connection() as conn:
        rows = conn.execute("SELECT allowed_roles FROM documents WHERE filename = %s", (filename,)).fetchall()
    if not rows:
        raise GoldSetError(f"“{filename}” adlı yüklenmiş bir belge yok.")
    if role != "admin" and not any(role in r[0] for r in rows):
        raise GoldSetError(f"Soruyu soran rol ({role}) “{filename}” belgesini okuyamıyor; bu rol için doğru cevap "
                           "bu belgede olamaz. Belgenin rollerini değiştirin ya da “bizim dokümanlarımızda yok” deyin.")


__all__ = ["SAMPLE_CORPUS", "SAMPLE_FILE", "SAMPLE_NAME", "GoldFormatError", "GoldSetError", "GoldVersion",
           "ReviewMark", "add_from_review", "add_question", "find_set", "get_version", "history", "import_file",
           "import_questions", "import_sample", "list_sets", "questions", "review_gold_id"]
