"""Document titles: what an upload is called when the admin gives no title, and what a title may be.

A title is shown in every citation, so it should be the document's own name with its Turkish
letters ("İş Sağlığı ve Güvenliği Kanunu (6331)"), not a file name ("6331 is sagligi ve
guvenligi kanunu"). In order:

1. the PDF's title metadata, when it looks like a title (word processors often store the
   file name there: "Microsoft Word - 6331 Sayılı ….doc" does not count);
2. the first heading of the first page with text: the upper-case lines a Turkish law starts
   with ("İŞ SAĞLIĞI VE GÜVENLİĞİ KANUNU", set in title case), or a first line in title
   case ("İş Güvenliği Prosedürü"); a law number printed below it ("Kanun Numarası : 6331")
   is added in brackets;
3. the file name, as before.

The admin can change it later (`ragcore.documents.catalog.set_document_title`, which validates with
`clean_title`).
"""

from __future__ import annotations

import re
from pathlib import Path

from ragcore.core import sanitize, turkish_lower

MAX_TITLE_CHARS = 500
UNTITLED = "Adsız belge"
_MAX_HEADING_LINES = 3
_MAX_HEADING_CHARS = 160

# Metadata that names the file or the program rather than the document.
_FILE_LIKE = re.compile(
    r"^(microsoft\s+(word|excel|powerpoint)\s*-|untitled|başlıksız|adsız|document\d*$|belge\d*$|slide\s*\d)"
    r"|\.(docx?|pdf|odt|rtf|txt|xlsx?|pptx?)$",
    re.IGNORECASE,
)
_LAW_NUMBER = re.compile(r"^Kanun\s+(?:Numarası|No)\s*[.:]?\s*:?\s*(\d{3,5})\b", re.IGNORECASE | re.MULTILINE)
# Lines that structure a document but do not name it.
_STRUCTURAL = re.compile(
    r"^((BİRİNCİ|İKİNCİ|ÜÇÜNCÜ|DÖRDÜNCÜ|BEŞİNCİ|BIRINCI|IKINCI|UCUNCU|DORDUNCU|BESINCI|[IVX]+\.?)\s+"
    r"(BÖLÜM|BOLUM|KISIM|KİTAP|KITAP)|(GEÇİCİ\s+|GECICI\s+|EK\s+)?MADDE\b|İÇİNDEKİLER|ICINDEKILER)",
    re.IGNORECASE,
)
# Words written in lower case inside a Turkish title.
_LOWER_WORDS = frozenset("ve veya ile ya da de ki için ila ile".split())
_ROMAN = re.compile(r"^[IVXLC]+$")
_LETTER = re.compile(r"[^\W\d_]", re.UNICODE)


class TitleError(ValueError):
    """A title the admin typed cannot be used; `str(exc)` is a Turkish message."""


def turkish_upper(text: str) -> str:
    """Uppercase with Turkish rules: i→İ and ı→I first."""
    return text.replace("i", "İ").replace("ı", "I").upper()


_TURKISH_LETTERS = re.compile("[İıŞşĞğÇçÖöÜü]")


def _capitalised(word: str, ascii_folded: bool) -> str:
    lowered = word.lower() if ascii_folded else turkish_lower(word)
    return (lowered[:1].upper() if ascii_folded else turkish_upper(lowered[:1])) + lowered[1:]


def turkish_title_case(text: str) -> str:
    """"SOSYAL SİGORTALAR VE GENEL SAĞLIK SİGORTASI KANUNU" → "Sosyal Sigortalar ve Genel Sağlık Sigortası Kanunu".

    Connectives (ve, ile, veya, …) stay lower case inside the title, Roman numerals and
    vowel-less abbreviations ("SGK") stay upper case; an apostrophe suffix stays lower case
    ("TÜRKİYE'NİN" → "Türkiye'nin").
    """
    # Text without a single Turkish letter was written in ASCII ("YONETMELIK"): its I is an i.
    ascii_folded = not _TURKISH_LETTERS.search(text)
    out = []
    for index, word in enumerate(text.split()):
        bare = word.strip("()[],.;:\"'“”")
        if _ROMAN.match(bare) or (bare.isupper() and len(bare) <= 4 and not re.search("[AEIİOÖUÜaeıioöuü]", bare)):
            out.append(word)
        elif index > 0 and turkish_lower(word) in _LOWER_WORDS:
            out.append(turkish_lower(word))
        else:
            out.append("-".join(_capitalised(part, ascii_folded) for part in word.split("-")))
    return " ".join(out)


def _letters(text: str) -> list[str]:
    return _LETTER.findall(text)


def _upper_line(line: str) -> bool:
    letters = _letters(line)
    return len(letters) >= 3 and all(ch == turkish_upper(ch) for ch in letters)


def _title_case_line(line: str) -> bool:
    """Most of its longer words begin with a capital and it does not read like a sentence."""
    if line.endswith((".", ",", ";", ":")):
        return False
    longer = [w for w in line.split() if len(_letters(w)) >= 3]
    if not longer:
        return False
    capitals = sum(1 for w in longer if _letters(w)[0] == turkish_upper(_letters(w)[0]))
    return capitals / len(longer) >= 0.6


def looks_like_title(text: str | None) -> bool:
    """A metadata title worth showing: some letters, not a file or program name."""
    if not text:
        return False
    text = text.strip()
    return 3 <= len(text) <= MAX_TITLE_CHARS and len(_letters(text)) >= 3 and not _FILE_LIKE.search(text)


def heading_title(first_page: str) -> str | None:
    """The first heading of a page's text (see the module docstring), with the law number if printed."""
    lines = [line.strip() for line in first_page.splitlines() if line.strip()]
    heading: list[str] = []
    for line in lines[:_MAX_HEADING_LINES]:
        if _STRUCTURAL.match(line) or not _upper_line(line):
            break
        heading.append(line)
    if heading:
        title = turkish_title_case(" ".join(heading))
    elif lines and not _STRUCTURAL.match(lines[0]) and _title_case_line(lines[0]):
        title = lines[0]
    else:
        return None
    if len(title) > _MAX_HEADING_CHARS:
        return None
    number = _LAW_NUMBER.search(first_page)
    if number and number.group(1) not in title:
        title += f" ({number.group(1)})"
    return title


def filename_title(filename: str) -> str:
    stem = Path(filename).stem.replace("_", " ").replace("-", " ").strip()
    return stem[:MAX_TITLE_CHARS] or UNTITLED


def default_title(filename: str, metadata_title: str | None = None, first_page: str | None = None) -> str:
    """The title an upload gets when the admin gives none (module docstring: metadata, heading, file name)."""
    if metadata_title:
        candidate = " ".join(sanitize(metadata_title, single_line=True).split())
        if looks_like_title(candidate):
            return turkish_title_case(candidate) if _upper_line(candidate) else candidate[:MAX_TITLE_CHARS]
    heading = heading_title(first_page) if first_page else None
    return heading or filename_title(filename)


def clean_title(title: str) -> str:
    """A title the admin typed, as stored: one line, control characters removed, spaces collapsed."""
    cleaned = " ".join(sanitize(title or "", single_line=True).split())
    if not cleaned:
        raise TitleError("Başlık boş olamaz.")
    if len(cleaned) > MAX_TITLE_CHARS:
        raise TitleError(f"Başlık en fazla {MAX_TITLE_CHARS} karakter olabilir (şu an {len(cleaned)}).")
    if not _letters(cleaned) and not any(ch.isdigit() for ch in cleaned):
        raise TitleError("Başlıkta en az bir harf ya da rakam olmalı.")
    return cleaned
