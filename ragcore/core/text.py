"""Turkish text handling shared by ingestion, retrieval and the evaluation lab.

Lowercasing must be Turkish (İ→i, I→ı) before anything else: Python's and PostgreSQL's
default folding turn "IĞDIR" into "iğdir". The lexical form used by BM25 is the first five
characters of each lowercased word, a cheap stand-in for stemming an agglutinative language
(on TQuAD it beat plain tokens and Snowball stems).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from functools import lru_cache

import snowballstemmer

Tokenizer = Callable[[str], list[str]]

PREFIX_LENGTH = 5
_WORD_RE = re.compile(r"[^\W_]+", re.UNICODE)

# Frequent Turkish function words; used only by the "-stop" tokenizer variants of the lab.
STOPWORDS: frozenset[str] = frozenset(
    """acaba ama ancak artık aslında az bana bazı belki ben beni benim bir biri birkaç birçok
    biz bize bizi bu buna bunda bundan bunu bunun burada da daha de değil diye dolayı en gibi
    hem hep hepsi her hiç için ile ise işte kadar ki kim mi mu mü nasıl ne neden nerede niye o
    olan olarak oldu olduğu olmak olup ona ondan onlar onu onun ve veya ya yani şey şu şuna
    şunu tarafından üzere çok çünkü""".split()
)


# C0/C1 control characters other than whitespace: PostgreSQL refuses U+0000 in text, and
# none of them means anything in a title, a question or a PDF's text layer.
_CONTROL_RE = re.compile(r"[\x00-\x08\x0e-\x1f\x7f-\x84\x86-\x9f]")
_LINE_BREAK_RE = re.compile(r"[\t\n\r\x0b\x0c\x85\u2028\u2029]+")
_SURROGATE_RE = re.compile(r"[\ud800-\udfff]")


def sanitize(text: str, *, single_line: bool = False) -> str:
    """Text safe to store: control characters removed, lone surrogates replaced by U+FFFD.

    Applied where text enters Dayanak (PDF text layer, titles, file names, questions, feedback),
    so nothing downstream sees a NUL (PostgreSQL refuses it) or a lone surrogate (no UTF-8 form:
    psycopg raises UnicodeEncodeError; they come from undecodable file names and argv). Surrogate
    pairs that form a real character are joined. `single_line` turns line breaks and tabs into
    one space (titles, file names).
    """
    if single_line:
        text = _LINE_BREAK_RE.sub(" ", text)
    text = _CONTROL_RE.sub("", text)
    if _SURROGATE_RE.search(text):
        text = text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return text


def normalize(text: str) -> str:
    """NFKC: folds ligatures and compatibility forms that PDFs produce (ﬁ → fi)."""
    return unicodedata.normalize("NFKC", text)


def turkish_lower(text: str) -> str:
    """Lowercase with Turkish rules: İ→i and I→ı first, then the rest."""
    return normalize(text).replace("İ", "i").replace("I", "ı").lower()


_TURKISH_LOWER = "çğıöşüâîû"
_ASCII_FOLD = str.maketrans(_TURKISH_LOWER, "cgiosuaiu")
_TURKISH_LETTERS = frozenset(_TURKISH_LOWER + "ÇĞİÖŞÜÂÎÛ")  # what an English keyboard cannot type


def fold_ascii(text: str) -> str:
    """The spelling without Turkish letters (of lowercased text); the same as the database's
    fold_ascii() (migration 010), so questions typed on an English keyboard match."""
    return text.translate(_ASCII_FOLD)


def words(text: str) -> list[str]:
    """Turkish-lowercased word tokens (letters and digits; punctuation and apostrophes split)."""
    return _WORD_RE.findall(turkish_lower(text))


def typed_without_turkish_letters(word: str) -> bool:
    """Whether a word as typed has no Turkish letter: only such a word can be a keyboard's
    misspelling; its writer had the letters otherwise, so "vardiyasında" is no typo of "vardı"."""
    return not _TURKISH_LETTERS.intersection(word)


def typed_words(text: str) -> list[tuple[str, bool]]:
    """Each word of `text`, Turkish-lowercased, with whether it was typed without any Turkish
    letter (decided on the word as typed: "ISTEN" lowercases to "ısten" but was typed without)."""
    return [(turkish_lower(w), typed_without_turkish_letters(w)) for w in _WORD_RE.findall(normalize(text))]


def ascii_typed_words(text: str) -> list[str]:
    """The Turkish-lowercased words of `text` that were typed without any Turkish letter."""
    return [word for word, plain in typed_words(text) if plain]


def respell_word_prefixes(text: str, prefixes: dict[str, str], length: int = PREFIX_LENGTH) -> str:
    """`text` with each word typed without Turkish letters whose Turkish-lowercased first `length`
    letters are a key of `prefixes` spelled with that key's value instead, the rest of the word as
    typed (lowercased); every other character unchanged. A word with a Turkish letter anywhere is
    kept: its writer had the letters, so a prefix without them ("vardi" of "vardiyasında") is no typo."""
    if not prefixes:
        return text

    def respell(match: re.Match[str]) -> str:
        word = turkish_lower(match.group(0))
        head = prefixes.get(word[:length]) if typed_without_turkish_letters(match.group(0)) else None
        return match.group(0) if head is None else head + word[length:]

    return _WORD_RE.sub(respell, normalize(text))


def prefix_tokens(text: str, length: int = PREFIX_LENGTH) -> list[str]:
    return [word[:length] for word in words(text)]


def lexical_tokens(text: str) -> list[str]:
    """The token form stored in the postings table and used by the SQL BM25 leg."""
    return prefix_tokens(text, PREFIX_LENGTH)


@lru_cache(maxsize=1)
def _stemmer() -> snowballstemmer.stemmer:
    return snowballstemmer.stemmer("turkish")


def snowball_tokens(text: str) -> list[str]:
    return _stemmer().stemWords(words(text))


def _without_stopwords(tokenizer: Tokenizer) -> Tokenizer:
    def tokenize(text: str) -> list[str]:
        return [tok for word, tok in zip(words(text), tokenizer(text), strict=True) if word not in STOPWORDS]

    return tokenize


TOKENIZERS: dict[str, Tokenizer] = {
    "plain": words,
    "prefix5": lexical_tokens,
    "snowball": snowball_tokens,
    "plain-stop": _without_stopwords(words),
    "prefix5-stop": _without_stopwords(lexical_tokens),
    "snowball-stop": _without_stopwords(snowball_tokens),
}


def get_tokenizer(name: str) -> Tokenizer:
    try:
        return TOKENIZERS[name]
    except KeyError:
        raise ValueError(f"unknown tokenizer {name!r}; choose from {', '.join(TOKENIZERS)}") from None


# --------------------------------------------------------------------------- re-flowing lines

# A line that starts a paragraph or list item: "(1)", "a)", "ç)", "1)", "1.", "- ", "•", an
# article heading, or an amendment note ("(Ek fıkra: …)", "(Değişik: …)").
_PARAGRAPH_START = re.compile(
    r"^(\(\d+\)|\d+[.)]\s|[a-zçğıöşü]\)|[-–•·]\s|(?:GEÇİCİ\s+|EK\s+|Geçici\s+|Ek\s+)?(?:MADDE|Madde)\s+\d"
    r"|\((?:Ek|Değişik|Mülga|İptal|Ek fıkra|Değişik fıkra)\b)"
)
_SENTENCE_END = (".", ":", ";", "!", "?")
# A line this much shorter than the longest one ends its paragraph (the PDF did not wrap it).
_SHORT_LINE = 0.6


def _upper_case_line(line: str) -> bool:
    letters = [ch for ch in line if ch.isalpha()]
    return len(letters) >= 3 and all(not ch.islower() for ch in letters)


def reflow(text: str) -> str:
    """Join the lines a PDF wrapped inside a paragraph; keep real paragraph and list breaks.

    The stored text keeps the PDF's lines (the chunker reads article headings and numbered
    paragraphs at line starts); on screen a sentence broken in the middle reads badly. A line
    break stays where the next line opens a paragraph or list item, where an upper-case
    heading line ends, where a sentence ends and the next line begins with a capital, and
    after a line much shorter than the others (the last line of a paragraph or a heading).
    """
    lines = [line.strip() for line in text.splitlines()]
    lines = [line for line in lines if line]
    if len(lines) < 2:
        return "\n".join(lines)
    width = max(len(line) for line in lines)
    out = [lines[0]]
    for previous, line in zip(lines, lines[1:], strict=False):
        breaks = (
            _PARAGRAPH_START.match(line)
            or _upper_case_line(previous)
            or _upper_case_line(line)
            or (previous.endswith(_SENTENCE_END) and line[:1].isupper())
            or len(previous) < _SHORT_LINE * width
        )
        if breaks:
            out.append(line)
        else:
            out[-1] += " " + line
    return "\n".join(out)
