"""What a question asks for, and what a sentence holds that could answer it.

From the question words: kaç → a number (kaç gün → a number of days), ne zaman → a date, kim → a
name or institution, nerede → a place, hangi X → X. From a sentence: its numbers (digits or
Turkish numerals, with the unit after them), dates (years, months, centuries), names,
institutions and places. The extractive answerer's features compare the two.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from ragcore.core import fold_ascii, turkish_lower, typed_words

_NUMBER_MORPHEMES = ("sıfır", "bir", "iki", "üç", "dört", "dörd", "beş", "altı", "yedi", "sekiz", "dokuz", "on", "yirmi",
                     "otuz", "kırk", "elli", "altmış", "yetmiş", "seksen", "doksan", "yüz", "bin", "milyon",
                     "milyar", "trilyon")
_MORPHEME = "|".join(sorted(_NUMBER_MORPHEMES, key=len, reverse=True))
_COMPOUND_NUMBER = re.compile(rf"^(?:{_MORPHEME}){{2,5}}[a-zçğıöşü]{{0,7}}$")
# Single numerals that are also common words ("bir" a, "on" front/him, "altı" under, "yüz" face,
# "bin" ride, "yedi" ate) count only before a unit ("on gün", "bir yıl").
_AMBIGUOUS_NUMERALS = frozenset({"bir", "on", "altı", "yüz", "bin", "yedi"})
_NUMBER_WORD = re.compile(rf"^(?:{_MORPHEME})(?:[ıiuü]?nc[ıiuü]|ş?[ae]r|[dt][ae]n?|[yn]?[ıiuü]n?|[yn]?[ae]|"
                          rf"s[ıiuü]n?|l[ae]r\w*|l[ıiuü]k\w*)?$")
_UNITS = ("gün", "hafta", "ay", "yıl", "sene", "saat", "dakika", "saniye", "kişi", "adet", "tane", "metre",
          "kilometre", "km", "kg", "kilo", "ton", "lira", "tl", "dolar", "avro", "euro", "kuruş", "kat", "kez",
          "kere", "defa", "yüzyıl", "asır", "yaş", "derece", "gram", "litre", "hektar", "dönüm")
_MULTIPLIERS = frozenset(
    f"{stem}{suffix}" for stem, suffixes in (
        ("bin", ("", "e", "de", "den", "i", "in", "lerce")), ("yüz", ("", "e", "de", "den", "ü", "ün", "lerce")),
        ("milyon", ("", "a", "da", "dan", "u", "un", "larca")), ("milyar", ("", "a", "da", "dan", "ı", "ın", "larca")))
    for suffix in suffixes)
_MONTHS = ("ocak", "şubat", "mart", "nisan", "mayıs", "haziran", "temmuz", "ağustos", "eylül", "ekim", "kasım",
           "aralık")
_DATE_WORDS = ("yüzyıl", "asır", "milat")
_DATE_PATTERN = re.compile(r"^(?:1\d{3}|20\d{2}|\d{3})$|^\d{1,2}[./]\d{1,2}[./]\d{2,4}$")
_LIST_MARKER = re.compile(r"^\s*\(?(?:\d{1,3}|[a-zçğıöşü])\)\s*")
_INSTITUTION_WORDS = ("işveren", "işçi", "çalışan", "kurum", "kurul", "bakanlı", "bakan", "müdürlü", "başkanlı",
                      "komisyon", "mahkeme", "meclis", "hükümet", "belediye", "valili", "şirket", "üniversite",
                      "dernek", "vakıf", "hekim", "uzman", "temsilci", "sendika", "padişah", "kral", "sultan",
                      "halife", "imparator", "hükümdar", "vezir", "paşa", "devlet")
# (no "ada", "dağ", "göl": they begin "adalet", "dağıtım", "gölge"; a named island or mountain is a name)
_PLACE_WORDS = ("şehir", "şehr", "ülke", "bölge", "ilçe", "köy", "kent", "kasaba", "nehir", "nehr", "deniz",
                "kıta", "vilayet", "eyalet", "sancak", "liman", "körfez", "yarımada", "işyeri", "mahalle", "semt",
                "başkent")
_PLACE_SUFFIX = re.compile(r"^[A-ZÇĞİÖŞÜÂÎÛ][\wçğıöşüâîû]+['’](?:[dt][ae]n?|[yn]?[ae]|[dt][ae]ki)$")
_PERSON_WHICH = ("kişi", "padişah", "kral", "sultan", "halife", "hükümdar", "imparator", "komutan", "yazar",
                 "şair", "bilim", "devlet", "kurum", "kurul", "bakan", "isim")
_PLACE_WHICH = _PLACE_WORDS
_DATE_WHICH = ("yıl", "tarih", "yüzyıl", "asır", "gün", "dönem", "sene", "zaman", "ayda", "ayın")


@dataclass(frozen=True)
class Asked:
    """What a question asks for, from its question words."""

    amount: bool  # kaç, ne kadar, yüzde, kaçıncı
    unit: str  # "gün" for "kaç gün", else ""
    date: bool  # ne zaman, hangi yıl/tarih, kaç yılında
    person: bool  # kim, kimler, hangi padişah …
    place: bool  # nerede, nereye, hangi şehir …
    which: str  # the noun after "hangi" (its first four letters), else ""

    @property
    def anything(self) -> bool:
        """A particular kind of fact (not a yes/no or "what does the law say" question)."""
        return self.amount or bool(self.unit) or self.date or self.person or self.place or bool(self.which)


def _starts(token: str, stems: Sequence[str]) -> bool:
    return any(token.startswith(stem) for stem in stems)


_UNITS_LONGEST_FIRST = sorted(_UNITS, key=len, reverse=True)


@lru_cache(maxsize=16)
def _folded(stems: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(fold_ascii(stem) for stem in stems)


def _begins(word: str, plain: bool, stems: tuple[str, ...]) -> bool:
    """`word` begins with one of `stems`; a word typed without Turkish letters ("kac", "yilinda")
    is compared folded, a word typed with them as typed."""
    return word.startswith(stems) or (plain and fold_ascii(word).startswith(_folded(stems)))


def _unit_after(word: str, plain: bool) -> str:
    """The first three letters of the word after "kaç"; typed without Turkish letters, spelled as
    the unit it begins ("gun" is "gün", as the sentences' units are)."""
    if plain:
        for unit in _UNITS_LONGEST_FIRST:
            if fold_ascii(word).startswith(fold_ascii(unit)):
                return (unit + word[len(unit):])[:3]
    return word[:3]


@lru_cache(maxsize=4096)
def asked(question: str) -> Asked:
    """Question words → the kind of fact the answer must contain.

    Question words typed without Turkish letters are read folded, so that "kac gun" asks for a
    number of days as "kaç gün" does; the noun after "hangi" is read as typed."""
    typed = typed_words(question)
    text = " ".join(word for word, _ in typed)
    amount = date = person = place = False
    unit = which = ""
    for i, (token, plain) in enumerate(typed):
        following, following_plain = typed[i + 1] if i + 1 < len(typed) else ("", False)
        if _begins(token, plain, ("kaç",)):
            if _begins(following, following_plain, ("yılında", "tarihinde", "senesinde")):
                date = True
            else:
                amount = True
                unit = _unit_after(following, following_plain) if following and not _begins(
                    token, plain, ("kaçıncı",)) else unit
        elif token == "yüzde" or (plain and token == "yuzde"):
            amount = True
        elif re.fullmatch(r"kim(?:ler)?(?:dir|dır|in|e|i|den|le|lerdir|lerin|lere|leri)?",
                          fold_ascii(token) if plain else token):
            person = True
        elif token.startswith("nere"):
            place = True
        elif token == "hangi" and following:
            which = following[:4]
            # as typed: folded, "kitap" would begin with "kıta"
            date = date or _starts(following, _DATE_WHICH)
            place = place or _starts(following, _PLACE_WHICH)
            person = person or _starts(following, _PERSON_WHICH)
    if "ne zaman" in text:
        date = True
    if "ne kadar" in text:
        amount = True
    return Asked(amount, unit, date, person, place, which)


@dataclass(frozen=True)
class Facts:
    """What a sentence contains that could answer a question (tokens Turkish-lowercased)."""

    numbers: frozenset[str]  # number tokens (digits or numerals)
    units: frozenset[str]  # first three letters of the word after each number
    dates: frozenset[str]  # years, months, centuries
    names: frozenset[str]  # capitalised words not at the start of the sentence
    institutions: bool
    places: frozenset[str]  # capitalised words with a place suffix (İstanbul'da), place nouns


_TOKEN = re.compile(r"[^\W_]+(?:['’][^\W_]+)?")


def _before_unit(following: Sequence[str]) -> bool:
    """The words after a numeral name a unit ("gün", "iş günü", "yıl") or a multiplier ("bin")."""
    word = following[1] if len(following) > 1 and following[0] == "iş" else (following[0] if following else "")
    if word in _MULTIPLIERS:
        return True
    # short stems ("ay", "yıl", "kat") only with a short suffix: "ayda" yes, "ayrıntı" no
    return any(word.startswith(unit) and len(word) - len(unit) <= (4 if len(unit) <= 3 else 6) for unit in _UNITS)


def _is_number(token: str, following: Sequence[str]) -> bool:
    if any(ch.isdigit() for ch in token):
        return True
    if _COMPOUND_NUMBER.match(token):
        return True
    if token in _AMBIGUOUS_NUMERALS:
        return _before_unit(following)
    return bool(_NUMBER_WORD.match(token)) and not _starts(token, tuple(_AMBIGUOUS_NUMERALS))


@lru_cache(maxsize=65536)
def facts(sentence: str) -> Facts:
    raw = _TOKEN.findall(_LIST_MARKER.sub("", sentence, count=1))
    lower = [turkish_lower(t) for t in raw]
    numbers, units, dates, names, places = set(), set(), set(), set(), set()
    institutions = False
    for i, (token, low) in enumerate(zip(raw, lower, strict=True)):
        following = lower[i + 1 : i + 3]
        base = re.split(r"['’]", low)[0]
        if _is_number(base, following):
            numbers.add(base)
            units.update(word[:3] for word in following)
            if _DATE_PATTERN.match(base):
                dates.add(base[:5])
        if _starts(base, _MONTHS) or _starts(base, _DATE_WORDS):
            dates.add(base[:5])
        if i > 0 and token[:1].isupper() and not token.isupper():
            names.add(base[:5])
            if _PLACE_SUFFIX.match(token):
                places.add(base[:5])
        if _starts(base, _INSTITUTION_WORDS):
            institutions = True
        if _starts(base, _PLACE_WORDS):
            places.add(base[:5])
    return Facts(frozenset(numbers), frozenset(units), frozenset(dates), frozenset(names), institutions,
                 frozenset(places))
