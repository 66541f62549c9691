"""The conversation gold-set format: employees' conversations of two or more turns, each turn with its gold.

A follow-up ("Peki doğumdan sonra?", "ikiz olursa?") means nothing alone; the lab measures how
well a follow-up is resolved by retrieving for the typed turn after its history and comparing
with the same question written out in full (`standalone`). So every turn carries a gold
question's fields (expected document/article/pages, roles, key facts, answerable; the format of
`eval.goldset`) plus the two a conversation adds: `standalone` and `follow_up`.

One conversation per JSONL line (docs/eval.md, "Conversation gold set"):
`{"id", "split", "notes", "turns": [{"question", "standalone", "follow_up", "answerable",
"expected", "roles", "key_facts", "notes"}, …]}`. A file is read whole and checked whole: every
problem is reported with its line and field ("satır 3, alan “turns[2].key_facts”: …"), and a
file with any problem yields nothing. Each turn's gold fields go through the very checks of
`eval.goldset.question_from_object`, so a turn is valid exactly when it would be a valid gold
question. `split` is "dev" (tune here) or "test" (report here), stored in the file so it never
moves when conversations are added.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

# Besides the public names, the field checks of a gold question (`_Row`, `_id`, `_text`, `_kind`),
# shared on purpose: a conversation's id, notes and problem lines behave exactly as a gold question's.
from eval.goldset import (
    MAX_NOTES_CHARS,
    MAX_QUESTION_CHARS,
    Expected,
    GoldFormatError,
    GoldQuestion,
    _id,
    _kind,
    _Row,
    _text,
    check_fields,
    decode,
    parse_lines,
    question_from_object,
)

CONVERSATIONS_FILE = Path(__file__).resolve().parent / "gold" / "conversations_laws.jsonl"
# Written after the follow-up rules were frozen, by a writer who had read neither them nor the
# file above; all test (round 19). The gold set is both files.
UNSEEN_FILE = CONVERSATIONS_FILE.with_name("conversations_unseen.jsonl")
GOLD_FILES = (CONVERSATIONS_FILE, UNSEEN_FILE)
CONVERSATION_FIELDS = ("id", "split", "notes", "turns")
REQUIRED_CONVERSATION_FIELDS = ("id", "split", "turns")
TURN_FIELDS = ("question", "standalone", "follow_up", "answerable", "expected", "roles", "key_facts", "notes")
# The turn fields that are a gold question's (eval.goldset.JSONL_FIELDS without its id).
QUESTION_FIELDS = ("question", "answerable", "expected", "roles", "key_facts", "notes")
SPLITS = ("dev", "test")
DEV, TEST = SPLITS
MIN_TURNS = 2  # one turn is a question, not a conversation: eval/gold/*.jsonl hold those
# Caps keep a hostile or pasted file out of every lab run; the shipped set has 2-4 turns a
# conversation and 48 conversations.
MAX_TURNS = 10
MAX_CONVERSATIONS = 1000
MAX_FILE_BYTES = 5_000_000


class ConversationFormatError(GoldFormatError):
    """A conversation file with problems; `problems` lists each as "satır N, alan X: …" (Turkish)."""

    HEADER = "Sohbet doğrulama seti okunmadı; hiçbir sohbet alınmadı. Sorunlar:"


@dataclass(frozen=True)
class GoldTurn:
    """One turn: the question as typed, the same question written out in full, and its gold."""

    id: str  # "<conversation id>.<n>", n counted from 1
    question: str
    standalone: str
    follow_up: bool
    answerable: bool
    expected: tuple[Expected, ...]
    roles: tuple[str, ...]
    key_facts: tuple[str, ...] = ()
    notes: str = ""

    def as_question(self, *, standalone: bool = False) -> GoldQuestion:
        """The turn as a gold question (as typed, or written out), for the lab's question runs."""
        return GoldQuestion(self.id, self.standalone if standalone else self.question, self.answerable,
                            self.expected, self.roles, self.key_facts, self.notes)

    def as_dict(self) -> dict:
        """The JSONL object of the turn, fields in the documented order."""
        return {"question": self.question, "standalone": self.standalone, "follow_up": self.follow_up,
                "answerable": self.answerable, "expected": [e.as_dict() for e in self.expected],
                "roles": list(self.roles), "key_facts": list(self.key_facts), "notes": self.notes}


@dataclass(frozen=True)
class GoldConversation:
    id: str
    split: str
    turns: tuple[GoldTurn, ...]
    notes: str = ""

    def as_dict(self) -> dict:
        """The JSONL object, fields in the documented order."""
        return {"id": self.id, "split": self.split, "notes": self.notes, "turns": [t.as_dict() for t in self.turns]}


# --------------------------------------------------------------------------- one line


def _turn(row: _Row, item: object, n: int, conversation_id: str) -> GoldTurn | None:
    """One turn object → GoldTurn (or None); its problems go to `row`, named "turns[n].…"."""
    where = f"turns[{n}]"
    if not isinstance(item, dict):
        row.bad(where, "bir nesne olmalı: {\"question\": …, \"standalone\": …, \"follow_up\": …}")
        return None
    unknown = [k for k in item if k not in TURN_FIELDS]
    if unknown:
        row.bad(where, f"bilinmeyen alan(lar): {', '.join(unknown)}; geçerli olanlar: {', '.join(TURN_FIELDS)}")
    # The gold fields go through the gold question's own checks; "t" stands in for the id,
    # which a turn takes from its conversation.
    gold, found = question_from_object({"id": "t", **{k: item[k] for k in QUESTION_FIELDS if k in item}},
                                       row.line, prefix=where + ".")
    row.problems += found
    own = _Row(row.line, prefix=where + ".")
    for name in ("standalone", "follow_up"):
        if name not in item:
            own.bad(name, "eksik")
    standalone = (_text(own, "standalone", item["standalone"], required=True, limit=MAX_QUESTION_CHARS)
                  if "standalone" in item else "")
    follow_up = item.get("follow_up", False)
    if not isinstance(follow_up, bool):
        own.bad("follow_up", f"true ya da false olmalı, {_kind(follow_up)} verilmiş")
    if gold is not None and follow_up and standalone and standalone.casefold() == gold.question.casefold():
        own.bad("standalone", "bir devam sorusunda, sorunun önceki turlar olmadan anlaşılan tam hâli olmalı; "
                              "yazıldığı hâlinin aynısı verilmiş")
    row.problems += own.problems
    if gold is None or own.problems:
        return None
    return GoldTurn(f"{conversation_id}.{n}", gold.question, standalone, follow_up, gold.answerable, gold.expected,
                    gold.roles, gold.key_facts, gold.notes)


def _turns(row: _Row, value: object, conversation_id: str) -> tuple[GoldTurn, ...]:
    if not isinstance(value, list):
        row.bad("turns", "turlardan oluşan bir liste olmalı: [{\"question\": …}, {\"question\": …}]")
        return ()
    if len(value) > MAX_TURNS:  # not read further: a cap is also a bound on the work
        row.bad("turns", f"bir sohbette en fazla {MAX_TURNS} tur olabilir (şu an {len(value)})")
        return ()
    if len(value) < MIN_TURNS:
        row.bad("turns", f"bir sohbet en az {MIN_TURNS} tur içermeli (şu an {len(value)}); tek soruları "
                         "doğrulama seti dosyasına yazın")
    turns = [_turn(row, item, n, conversation_id) for n, item in enumerate(value, start=1)]
    if turns and turns[0] is not None and turns[0].follow_up:
        row.bad("turns[1].follow_up", "sohbetin ilk turu bir devam sorusu olamaz; false yazın")
    first = turns[0] if turns else None
    for n, turn in enumerate(turns[1:], start=2):
        if first is not None and turn is not None and turn.roles != first.roles:
            row.bad(f"turns[{n}].roles", "bir sohbeti tek bir kullanıcı sorar: roller ilk turdakilerle aynı olmalı "
                                         f"({', '.join(first.roles)})")
    return tuple(t for t in turns if t is not None)


def conversation_from_object(obj: object, line: int) -> tuple[GoldConversation | None, list[str]]:
    """One JSONL object → (conversation or None, its problems)."""
    row = _Row(line)
    if not isinstance(obj, dict):
        row.problems.append(f"satır {line}: bir JSON nesnesi olmalı ({{\"id\": …, \"split\": …, \"turns\": […]}}), "
                            f"{_kind(obj)} verilmiş")
        return None, row.problems
    check_fields(row, obj, CONVERSATION_FIELDS, REQUIRED_CONVERSATION_FIELDS)
    conversation_id = _id(row, obj.get("id"))
    split = obj.get("split")
    if "split" in obj and split not in SPLITS:
        row.bad("split", f"“{DEV}” (ayarlama) ya da “{TEST}” (raporlama) olmalı, {split!r} verilmiş")
    notes = _text(row, "notes", obj.get("notes"), required=False, limit=MAX_NOTES_CHARS)
    turns = _turns(row, obj["turns"], conversation_id) if "turns" in obj else ()
    if row.problems:
        return None, row.problems
    return GoldConversation(conversation_id, str(split), turns, notes), []


# --------------------------------------------------------------------------- whole files


def parse_conversations(text: str) -> list[GoldConversation]:
    """Every conversation of a JSONL text, or ConversationFormatError naming each bad line and field."""
    if len(text) > MAX_FILE_BYTES:
        raise ConversationFormatError([f"dosya çok büyük ({len(text)} karakter); en fazla {MAX_FILE_BYTES} "
                                       "karakter okunur"])
    parsed, problems = parse_lines(text, conversation_from_object)
    seen: dict[str, int] = {}
    for line, conversation in parsed:
        if conversation.id in seen:
            problems.append(f"satır {line}, alan “id”: “{conversation.id}” satır {seen[conversation.id]} ile aynı; "
                            "her sohbetin kimliği tek olmalı")
        seen.setdefault(conversation.id, line)
    if not parsed and not problems:
        problems.append("dosyada hiç sohbet yok")
    if len(parsed) > MAX_CONVERSATIONS:
        problems.append(f"en fazla {MAX_CONVERSATIONS} sohbet okunur (dosyada {len(parsed)})")
    if problems:
        raise ConversationFormatError(problems)
    return [conversation for _, conversation in parsed]


def load_conversations(path: Path | str = CONVERSATIONS_FILE) -> list[GoldConversation]:
    """The conversations of a JSONL file (UTF-8), or ConversationFormatError."""
    path = Path(path)
    size = path.stat().st_size
    if size > MAX_FILE_BYTES:
        raise ConversationFormatError([f"“{path.name}” çok büyük ({size} bayt); en fazla {MAX_FILE_BYTES} bayt okunur"])
    try:
        text = decode(path.read_bytes())
    except GoldFormatError as exc:
        raise ConversationFormatError(exc.problems) from None
    return parse_conversations(text)


def load_gold_files(paths: Sequence[Path] = GOLD_FILES) -> list[GoldConversation]:
    """Several conversation files as one set, in order; a conversation id in two files is refused,
    since a turn's id ("c01.2") must name one turn in a run's records."""
    conversations: list[GoldConversation] = []
    for path in paths:
        conversations += load_conversations(path)
    twice = sorted(i for i, n in Counter(c.id for c in conversations).items() if n > 1)
    if twice:
        raise ConversationFormatError([f"sohbet kimliği birden çok dosyada: {', '.join(twice)}"])
    return conversations


def by_split(conversations: Sequence[GoldConversation]) -> dict[str, list[GoldConversation]]:
    """{"dev": […], "test": […]} in file order: tune on dev, report on test."""
    return {split: [c for c in conversations if c.split == split] for split in SPLITS}


def to_jsonl(conversations: Iterable[GoldConversation]) -> str:
    return "".join(json.dumps(c.as_dict(), ensure_ascii=False) + "\n" for c in conversations)


def fingerprint(conversations: Iterable[GoldConversation]) -> str:
    """sha256 of the JSONL form: the data fingerprint of a conversation set on a run card."""
    return hashlib.sha256(to_jsonl(conversations).encode("utf-8")).hexdigest()
