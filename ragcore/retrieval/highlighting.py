"""Which of a question's words to mark in the passages shown as its sources.

Bolding every word the question shares with a passage marks "gün", "içinde", "işveren" in
nearly every line of a law and tells the reader nothing. A question term is marked only if

* it is a content word: not a Turkish function word, question particle or one of the common
  time and measure words of legal text (`COMMON_WORDS`), at least three letters, not a number;
* and it is rare enough in the documents the asker's role may read: in at most `RARE_SHARE`
  of their chunks (`ragcore.documents.catalog.term_document_frequencies`, role-scoped, never the
  global lexicon). With fewer than `MIN_CHUNKS` readable chunks a share says little, and the
  word list alone decides.

Terms are the prefix-5 forms the lexical index uses, so "bildirim" in the question marks
"bildirir" in the passage. Measured on Laws 6331 + 4857 (325 chunks): "işveren" occurs in
52 % of the chunks, "çalışan" in 65 %, "risk" in 3 %, "kaza" in 3 %, "bildir" in 14 %; 20 %
keeps the last three and drops the first two.
"""

from __future__ import annotations

from ragcore.core import PREFIX_LENGTH, STOPWORDS, words
from ragcore.store import Database

MIN_TERM_CHARS = 3
RARE_SHARE = 0.2
MIN_CHUNKS = 20
# Question particles and copulas ("yükümlü müdür?", "nedir?") and words that legal text uses in
# every other sentence without them being what a question is about.
COMMON_WORDS = frozenset(
    """midir mıdır mudur müdür nedir neler hangi hangisi hangileri kaç nasıl nasıldır var yok
    gün günü günde içinde içerisinde süre süresi kadar sonra önce göre ait dair hakkında ilgili
    yıl yılı ay ayı hafta saat tarih tarihi az fazla en çok olan olarak olur olması gerekir gereken
    halinde durumunda şekilde yapılır edilir eder etmek yapmak yapar varsa""".split()
)


def question_terms(question: str) -> frozenset[str]:
    """Prefixes of the question's content words (before any frequency check)."""
    return frozenset(
        word[:PREFIX_LENGTH]
        for word in words(question)
        if len(word) >= MIN_TERM_CHARS and word not in STOPWORDS and word not in COMMON_WORDS and not word.isdigit()
    )


def highlight_terms(db: Database, question: str, role: str) -> frozenset[str]:
    """The question's terms worth marking in the passages this role reads (module docstring)."""
    from ragcore.documents import term_document_frequencies

    candidates = question_terms(question)
    if not candidates:
        return candidates
    readable, frequencies = term_document_frequencies(db, candidates, role)
    if readable < MIN_CHUNKS:
        return candidates
    return frozenset(term for term in candidates if frequencies.get(term, 0) / readable <= RARE_SHARE)
