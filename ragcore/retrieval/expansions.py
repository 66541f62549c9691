"""The term-expansion table: everyday words and the laws' words for them (migration 010).

One table for the whole database, the same for every role: a row adds words to the lexical
query, never documents or scores of its own, so what it changes for a user depends only on
the question and the documents that user may read. The admin edits it on its own page
("Terim eşleştirmeleri"); the defaults were written from the three sample laws' vocabulary and
reviewed row by row against them (migration 018).

A row's legal side is a list of terms as a reader of the laws names them: a lemma ("fesih",
"izin") or a phrase that occurs in the laws ("yıllık ücretli izin"), never a list of a word's
inflected forms. The lexical index keeps each word's first PREFIX_LENGTH letters, the same for
most of a word's forms ("ücret", "ücretin", "ücretleri"), but not where a short word's stem
changes before a vowel ("izin" → "izni", "fesih" → "feshi", "hak" → "hakkı"): for a lemma,
`term_tokens` adds the token of that changed stem, so that a row need not list "izni" beside
"izin". Measured on the everyday sets (lexical leg alone, docs/history.md): writing out every
inflectional suffix of a short lemma as well lowered Recall@5, so only the stem changes are.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import psycopg

from ragcore.core import PREFIX_LENGTH, STOPWORDS, fold_ascii, turkish_lower, words
from ragcore.store import Database

MAX_LEGAL_WORDS = 12
# An everyday phrase and each legal term are words or short phrases, never paragraphs: every term
# is added to the lexical query of every matching question (and shown on the admin's page), so
# a row stays small by construction (at most 80 + 12 × 60 characters). The table's CHECKs
# (migrations 010 and 019) hold the same bounds for anything that bypasses this module.
MAX_EVERYDAY_CHARS = 80
MAX_LEGAL_TERM_CHARS = 60
# How an everyday word matches a question word: by their first PREFIX_LENGTH letters, as the
# lexical index matches ("kovulmak" ~ "kovuldum"); a shorter everyday word of at least
# MIN_STEM_CHARS letters by being the start of the question word ("maaş" in "maaşımı"); a
# shorter one only itself ("zam" must not fire on "zaman").
MIN_STEM_CHARS = 4


class ExpansionError(ValueError):
    """A row that cannot be stored; the message is Turkish, for the admin."""


def _tokens(text: str) -> frozenset[str]:
    return frozenset(word[:PREFIX_LENGTH] for word in words(text))


# Turkish stem changes before a vowel: a high vowel between the last two consonants drops
# ("izin" → "izni", "kayıt" → "kaydı"), a one-syllable word doubles its consonant ("hak" →
# "hakkı"), a final p/ç/t/k softens ("sebep" → "sebebi"). A stem a word does not really take
# ("ücret" → "ücred") adds a token no law has.
_SOFTENED = {"p": "b", "ç": "c", "t": "d", "k": "ğ"}
_VOWELS = frozenset("aeıioöuüâîû")
_HIGH_VOWELS = frozenset("ıiuü")


def _changed_stems(word: str) -> set[str]:
    stems = {word}
    if len(word) >= 4 and word[-1] not in _VOWELS and word[-2] in _HIGH_VOWELS and word[-3] not in _VOWELS:
        stems.add(word[:-2] + word[-1])  # izin → izn, fesih → fesh
    if len(word) == 3 and word[-1] not in _VOWELS and word[-2] in _VOWELS:
        stems.add(word + word[-1])  # hak → hakk
    stems |= {stem[:-1] + _SOFTENED[stem[-1]] for stem in stems if stem[-1] in _SOFTENED}
    return stems - {word}


def _before_vowel(stem: str) -> list[str]:
    """The stem with the vowels its suffixes start with, by vowel harmony ("izn" → "izni", "izne",
    "iznin")."""
    last = next((c for c in reversed(stem) if c in _VOWELS), "e")
    back, rounded = last in "aıouâû", last in "oöuüû"
    high = ("u" if rounded else "ı") if back else ("ü" if rounded else "i")
    return [stem + high, stem + ("a" if back else "e"), stem + high + "n"]  # izni, izne, iznin(i)


def lemma_tokens(word: str) -> list[str]:
    """A lemma's own token, then those of its changed stems (only a word no longer than the token
    can change inside it)."""
    token = word[:PREFIX_LENGTH]
    if len(word) > PREFIX_LENGTH:
        return [token]
    changed = (form[:PREFIX_LENGTH] for stem in sorted(_changed_stems(word)) for form in _before_vowel(stem))
    return list(dict.fromkeys([token, *changed]))


def term_tokens(term: str) -> list[str]:
    """The tokens a legal term adds to a query: a lemma's `lemma_tokens`; a phrase's words' tokens
    as the laws write them, stop words ("ve", "ile") left out as the query leaves them."""
    found = [word for word in words(term) if word not in STOPWORDS]
    if len(found) == 1:
        return lemma_tokens(found[0])
    return list(dict.fromkeys(word[:PREFIX_LENGTH] for word in found))


@dataclass(frozen=True)
class Expansion:
    id: int
    everyday: str
    legal: tuple[str, ...]
    origin: str = "admin"
    updated_by: str | None = None
    folded_words: tuple[str, ...] = field(init=False, compare=False)
    legal_tokens: tuple[str, ...] = field(init=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "folded_words", tuple(fold_ascii(w) for w in words(self.everyday)))
        legal = [token for text in self.legal for token in term_tokens(text)]
        object.__setattr__(self, "legal_tokens", tuple(dict.fromkeys(legal)))

    def used_in(self, folded_question_words: list[str]) -> bool:
        """Whether every everyday word occurs among the question's words, both spelled without
        Turkish letters ("maas" ~ "maaş")."""
        return bool(self.folded_words) and all(any(_word_matches(w, q) for q in folded_question_words)
                                               for w in self.folded_words)


def _word_matches(everyday: str, asked: str) -> bool:
    if len(everyday) >= PREFIX_LENGTH:
        return asked[:PREFIX_LENGTH] == everyday[:PREFIX_LENGTH]
    return asked == everyday or (len(everyday) >= MIN_STEM_CHARS and asked.startswith(everyday))


_COLUMNS = "id, everyday, legal, origin, updated_by"


def load_expansions(conn: psycopg.Connection) -> list[Expansion]:
    """Every row, in the caller's transaction (the retrieval snapshot reads it consistently)."""
    rows = conn.execute(f"SELECT {_COLUMNS} FROM public.term_expansions ORDER BY everyday").fetchall()
    return [Expansion(r[0], r[1], tuple(r[2]), r[3], r[4]) for r in rows]


def list_expansions(db: Database) -> list[Expansion]:
    with db.connection() as conn:
        return load_expansions(conn)


def _clean(everyday: str, legal: list[str] | tuple[str, ...] | str) -> tuple[str, list[str]]:
    everyday = " ".join(turkish_lower(everyday).split())
    items = legal.split(",") if isinstance(legal, str) else list(legal)
    legal_words = list(dict.fromkeys(" ".join(turkish_lower(x).split()) for x in items if x.strip()))
    if len(everyday) < 2 or not words(everyday):
        raise ExpansionError("Günlük ifade en az iki harf olmalı (ör. “maaş”).")
    if len(everyday) > MAX_EVERYDAY_CHARS:
        raise ExpansionError(f"Günlük ifade en fazla {MAX_EVERYDAY_CHARS} karakter olabilir.")
    if not legal_words:
        raise ExpansionError("En az bir kanun terimi yazın (ör. “ücret”). Birden çok terimi virgülle ayırın.")
    if len(legal_words) > MAX_LEGAL_WORDS:
        raise ExpansionError(f"Bir satırda en fazla {MAX_LEGAL_WORDS} kanun terimi olabilir.")
    too_long = next((w for w in legal_words if len(w) > MAX_LEGAL_TERM_CHARS), None)
    if too_long is not None:
        raise ExpansionError(f"Bir kanun terimi en fazla {MAX_LEGAL_TERM_CHARS} karakter olabilir "
                             f"(“{too_long[:30]}…” {len(too_long)} karakter). Terimleri virgülle ayırın; "
                             "uzun bir metin yerine kanundaki kelimeyi ya da kısa ifadeyi yazın.")
    if _tokens(everyday) >= {t for w in legal_words for t in _tokens(w)}:
        raise ExpansionError("Kanun terimleri günlük ifadeyle aynı; eşleştirme bir şey eklemez.")
    forms = inflected_pair(legal_words)
    if forms:
        raise ExpansionError(f"“{forms[0]}” ile “{forms[1]}” aynı kelimenin hâlleri: kelimeyi yalın hâliyle bir kez "
                             "yazın (ör. “ücret”, “izin”); çekimli hâlleri kendiliğinden aranır.")
    return everyday, legal_words


def inflected_pair(terms: list[str] | tuple[str, ...]) -> tuple[str, str] | None:
    """Two one-word terms that are forms of one word ("ücret" and "ücreti", "fesih" and "feshi"):
    they share a token (`term_tokens`) or one starts with the other. None when there are none."""
    bare = [term for term in terms if len(words(term)) == 1]
    for i, first in enumerate(bare):
        for second in bare[i + 1:]:
            if set(term_tokens(first)) & set(term_tokens(second)) or first.startswith(second) or second.startswith(first):
                return first, second
    return None


def save_expansion(db: Database, everyday: str, legal: list[str] | tuple[str, ...] | str, *,
                   updated_by: str | None, expansion_id: int | None = None) -> Expansion:
    """Add a row, or change row `expansion_id`; the next question uses it."""
    everyday, legal_words = _clean(everyday, legal)
    params = {"id": expansion_id, "everyday": everyday, "legal": legal_words, "by": updated_by}
    try:
        with db.connection() as conn:
            if expansion_id is None:
                row = conn.execute(
                    f"""INSERT INTO public.term_expansions (everyday, legal, origin, updated_by)
                        VALUES (%(everyday)s, %(legal)s, 'admin', %(by)s) RETURNING {_COLUMNS}""", params).fetchone()
            else:
                row = conn.execute(
                    f"""UPDATE public.term_expansions
                        SET everyday = %(everyday)s, legal = %(legal)s, updated_by = %(by)s, updated_at = now()
                        WHERE id = %(id)s RETURNING {_COLUMNS}""", params).fetchone()
    except psycopg.errors.UniqueViolation as exc:
        raise ExpansionError(f"“{everyday}” için zaten bir eşleştirme var; onu düzenleyin.") from exc
    if row is None:
        raise ExpansionError("Bu eşleştirme artık yok (başka bir yönetici silmiş olabilir).")
    return Expansion(row[0], row[1], tuple(row[2]), row[3], row[4])


def delete_expansion(db: Database, expansion_id: int) -> None:
    with db.connection() as conn:
        deleted = conn.execute("DELETE FROM public.term_expansions WHERE id = %s", (expansion_id,)).rowcount
    if not deleted:
        raise ExpansionError("Bu eşleştirme artık yok (başka bir yönetici silmiş olabilir).")
