"""The lead line of a quoted answer: which document and article the quotes come from.

A reader should know, without opening a source, where a quoted answer stands: "İş Kanunu
(4857), Madde 53'e göre:" — the document's title (which carries the law number when the PDF
printed one, `ragcore.documents.titles`), then the article the chunker found. A passage
outside any article is named by its page instead ("İzin Prosedürü, s. 12'ye göre:"; Turkish
spelling puts no suffix after a closing bracket, so the page is not written "(s. 12)'ye").
Two quotes from different places name both, in the order they are quoted ("… Madde 53 ve
Madde 54'e göre:").

The dative suffix ('e, 'a, 'ye, 'ya) follows the last word as it is read aloud: "53" is read
"elli üç" ('e), "10" "on" ('a), "6" "altı" ('ya), "25/A" ends in the letter "a" ('ya).
No library we keep does Turkish suffixation, and the rule for numerals is these few lines.
"""

from __future__ import annotations

from collections.abc import Sequence

from ragcore.core import Source, turkish_lower

LEAD_ENDING = "göre:"

_UNITS = ("", "bir", "iki", "üç", "dört", "beş", "altı", "yedi", "sekiz", "dokuz")
_TENS = ("", "on", "yirmi", "otuz", "kırk", "elli", "altmış", "yetmiş", "seksen", "doksan")
_BACK_VOWELS = "aıou"
_VOWELS = "aıoueiöü"


def spoken_last_word(number: int) -> str:
    """The last word of a number read aloud in Turkish: 53 → "üç", 40 → "kırk", 300 → "yüz"."""
    if number == 0:
        return "sıfır"
    if number % 10:
        return _UNITS[number % 10]
    if number % 100:
        return _TENS[number // 10 % 10]
    if number % 1000:
        return "yüz"
    if number % 10**6:
        return "bin"
    return "milyon" if number % 10**9 else "milyar"


def _dative_of_word(word: str) -> str:
    """'e / 'a / 'ye / 'ya by the word's last vowel, with the buffer y after a final vowel."""
    lowered = turkish_lower(word)
    vowels = [ch for ch in lowered if ch in _VOWELS]
    suffix = "a" if vowels and vowels[-1] in _BACK_VOWELS else "e"
    return ("'y" if lowered[-1:] in tuple(_VOWELS) else "'") + suffix


def dative(label: str) -> str:
    """`label` with the dative suffix: "Madde 53" → "Madde 53'e", "s. 6" → "s. 6'ya"."""
    tail = label.rstrip()
    digits = len(tail) - len(tail.rstrip("0123456789"))
    if digits:
        return tail + _dative_of_word(spoken_last_word(int(tail[-digits:])))
    last = tail[-1:]
    if last.isalpha() and (len(tail) == 1 or not tail[-2].isalpha()):  # a lone letter, "25/A": read by its name
        return tail + ("'ya" if turkish_lower(last) in _BACK_VOWELS else "'ye")
    return tail + _dative_of_word(tail.split()[-1] if tail.split() else "e")


def place(source: Source) -> str:
    """Where in its document a source stands: its article, or its page (a Word file's section) when it has none."""
    return source.article or source.locator_label


def lead_line(sources: Sequence[Source]) -> str:
    """"<title>, <place> ve <place>'e göre:" for the sources of the quotes, in quoting order;
    a place already named is not repeated, and a title only when the document changes."""
    places: list[tuple[str, str]] = []
    for source in sources:
        if (source.title, place(source)) not in places:
            places.append((source.title, place(source)))
    parts = []
    for index, (title, where) in enumerate(places):
        same_document = index > 0 and places[index - 1][0] == title
        parts.append(where if same_document else f"{title}, {where}")
    if not parts:
        return ""
    named = parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " ve " + parts[-1]
    return f"{dative(named)} {LEAD_ENDING}"


def without_lead(text: str) -> str:
    """The answer without its lead line (what the quotes say, for scoring them against a gold answer)."""
    first, _, rest = text.partition("\n")
    return rest.lstrip("\n") if first.endswith(LEAD_ENDING) and not first.startswith(">") else text
