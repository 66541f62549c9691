"""The lexical query a question becomes: its content tokens, respelled and expanded.

Employees type as they speak: without Turkish letters ("isten cikarildim"), and in everyday
words the laws do not use ("maaş" for "ücret", "kovuldum" for "fesih"). Two repairs, both
inside the retrieval's own snapshot and both role-independent in what they may add:

- respelling: a token of a word typed without Turkish letters that the role's lexicon does not
  hold is replaced by the lexicon term with the same ASCII-folded spelling (`fold_ascii`,
  migration 010), the most frequent one when several share it. The lexicon is the asking
  role's, so nothing outside its documents can shape the query;
- expansion: each row of `term_expansions` whose everyday words all occur in the question
  adds its legal words' tokens to the BM25 query (not to the evidence the refusal gate reads:
  a match there must come from the question's own words).

The dense leg embeds the question with the same respellings (`dense_question`): e5 reads
"isten cikarildim" as other words than "işten çıkarıldım", and its cosine fell far enough to
turn an answerable question into the flat refusal.

The result records what was applied, for the search page and the lab.
"""

from __future__ import annotations

from dataclasses import dataclass

import psycopg

from ragcore.core import (
    PREFIX_LENGTH,
    STOPWORDS,
    ascii_typed_words,
    fold_ascii,
    respell_word_prefixes,
    typed_words,
    words,
)
from ragcore.retrieval.expansions import Expansion, load_expansions

# Turkish question words and particles: they say nothing about the topic, and their prefix-5
# forms collide with content ("müdür" ~ "müdürlüğü"), so they do not count as evidence.
QUESTION_WORDS = frozenset(
    """mi mı mu mü midir mıdır mudur müdür misin mısın mıyım miyim var mı yok ne neden nedir nelerdir
    nasıl nasıldır niçin niye hangi hangisi hangileri kim kime kimdir kimler kaç kaçtır ne zaman nerede
    nereye nereden acaba lütfen""".split()
)


# The same words typed on an English keyboard ("icin", "kac", "nasil") are no content either:
# kept, they were respelled to "için" and "kaç" and counted as evidence the question shares with
# the documents. Only a word typed without Turkish letters is read folded ("YÖK" is no "yok"), and
# "su" stays content: it is also the word for water.
_FOLDED_STOPWORDS = frozenset(fold_ascii(w) for w in STOPWORDS) - {"su"}
_NOT_EVIDENCE = QUESTION_WORDS | STOPWORDS
_FOLDED_NOT_EVIDENCE = _FOLDED_STOPWORDS | frozenset(fold_ascii(w) for w in QUESTION_WORDS)


def _content_words(question: str, excluded: frozenset[str], folded: frozenset[str]) -> list[str]:
    """The question's words not in `excluded`, nor, typed without Turkish letters, in `folded`."""
    return [word for word, plain in typed_words(question)
            if word not in excluded and not (plain and fold_ascii(word) in folded)]


def query_terms(question: str) -> list[str]:
    """The lexical query: prefix-5 tokens of the question's words, Turkish stop words removed.

    A deliberate difference from exhaustive BM25 over every token: stop words ("ve", "bir",
    "bu", …) are in most chunks, weigh little, and made the leg read most of the index
    (measured on TQuAD in docs/retrieval.md). Removed by word, so "taraf" from "tarafların"
    stays even though the stop word "tarafından" has the same prefix.
    """
    return [word[:PREFIX_LENGTH] for word in _content_words(question, STOPWORDS, _FOLDED_STOPWORDS)]


def respelling_candidates(question: str) -> list[str]:
    """The query tokens that may be respelled: those of words typed without any Turkish letter.
    A writer who typed "vardiyasında" had the letters, so its prefix "vardi" is no typo of "vardı"."""
    return [word[:PREFIX_LENGTH] for word in ascii_typed_words(question) if fold_ascii(word) not in _FOLDED_STOPWORDS]


def evidence_terms(question: str) -> list[str]:
    """Lexical tokens of the question's content words (question words and stop words removed)."""
    return [word[:PREFIX_LENGTH] for word in _content_words(question, _NOT_EVIDENCE, _FOLDED_NOT_EVIDENCE)]


@dataclass(frozen=True)
class LexicalQuery:
    """What the lexical leg searches for, and the repairs that produced it."""

    terms: list[str]
    evidence_terms: list[str]
    respelled: dict[str, str]  # token as typed -> lexicon term used instead
    expansions: tuple[Expansion, ...]  # rows whose everyday words the question used

    def as_dict(self) -> dict:
        return {"respelled": dict(self.respelled),
                "expansions": [{"everyday": e.everyday, "legal": list(e.legal)} for e in self.expansions]}


_KNOWN_SQL = "SELECT term FROM lexicon WHERE role = %(role)s AND term = ANY(%(terms)s) AND df > 0"
_FOLDED_SQL = """
SELECT DISTINCT ON (fold_ascii(term)) fold_ascii(term), term
FROM lexicon
WHERE role = %(role)s AND fold_ascii(term) = ANY(%(folded)s) AND df > 0
ORDER BY fold_ascii(term), df DESC, term"""


def respell(tokens: list[str], known: set[str], by_fold: dict[str, str]) -> dict[str, str]:
    """Tokens not in `known`, mapped to `by_fold[fold_ascii(token)]` (the lexicon's most frequent
    term of that spelling) where that is another term."""
    return {t: by_fold[fold_ascii(t)] for t in sorted(set(tokens))
            if t not in known and by_fold.get(fold_ascii(t), t) != t}


def fold_index(df: dict[str, int]) -> dict[str, str]:
    """{folded spelling: its most frequent term (ties: the first in order)} — what _FOLDED_SQL
    answers, for a vocabulary held in memory (the lab's exact BM25 over the same chunks)."""
    best: dict[str, tuple[int, str]] = {}
    for term, count in df.items():
        if count <= 0:
            continue
        key = fold_ascii(term)
        if key not in best or (-count, term) < (-best[key][0], best[key][1]):
            best[key] = (count, term)
    return {key: term for key, (_, term) in best.items()}


def respellings(conn: psycopg.Connection, tokens: list[str], role: str) -> dict[str, str]:
    """Tokens the role's lexicon lacks, mapped to its term of the same folded spelling."""
    distinct = sorted(set(tokens))
    known = {row[0] for row in conn.execute(_KNOWN_SQL, {"role": role, "terms": distinct})}
    unknown = [t for t in distinct if t not in known]
    if not unknown:
        return {}
    by_fold = dict(conn.execute(_FOLDED_SQL, {"role": role, "folded": sorted({fold_ascii(t) for t in unknown})}))
    return respell(unknown, known, by_fold)


def dense_question(question: str, query: LexicalQuery) -> str:
    """The question as the dense leg embeds it: every word typed without Turkish letters whose token
    the lexical leg respelled starts with the lexicon's spelling ("isten cikarildim" -> "işten
    çıkarildim"); otherwise as typed."""
    return respell_word_prefixes(question, query.respelled, PREFIX_LENGTH)


def matching_expansions(expansions: list[Expansion], question: str) -> tuple[Expansion, ...]:
    """The rows whose everyday words all occur in the question (Expansion.used_in); the
    question's words are folded once, not once per row."""
    folded = [fold_ascii(w) for w in words(question)]
    return tuple(e for e in expansions if e.used_in(folded))


def build_query(question: str, respelled: dict[str, str], expansions: list[Expansion]) -> LexicalQuery:
    """The question's lexical query given its respellings and the expansion table."""
    terms = [respelled.get(t, t) for t in query_terms(question)]
    wanted = [respelled.get(t, t) for t in evidence_terms(question)]
    applied = matching_expansions(expansions, question)
    added = [token for e in applied for token in e.legal_tokens if token not in terms]
    return LexicalQuery(terms + list(dict.fromkeys(added)), wanted, respelled, applied)


def lexical_query(conn: psycopg.Connection, question: str, role: str) -> LexicalQuery:
    """The question's lexical query for this role, inside the caller's retrieval snapshot."""
    return build_query(question, respellings(conn, respelling_candidates(question), role), load_expansions(conn))
