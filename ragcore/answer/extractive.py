"""The extractive answerer ("alıntı modu"): quote the one or two context sentences that answer.

With no language model Dayanak still answers, by quoting the retrieved text verbatim with its
[n] citation. Which sentence to quote is decided by a small logistic regression over a handful
of features of (question, candidate sentence, its source): embedding similarity (question as a
query, sentences as passages), idf-weighted lexical overlap, whether the sentence holds what
the question asks for (kaç → a number, ne zaman → a date, kim → a name or institution, nerede →
a place, hangi X → X), length, source rank and position. The coefficients are data, not code:
`scripts/train_extractive.py` fits them on TQuAD *train* questions and writes
`ragcore/measured/extractive.json`, which this module loads on first use (a missing or invalid
file is an error). Applying them needs numpy only.

Selection: the most probable sentence, plus a second one only when its probability is
comparable (the ratio is chosen on the training holdout), never more than two sentences or
400 characters, never a bare heading ("MADDE 14 – İş kazası …" alone). A legal list stays one
sentence: "…hizmet süresi; a) … ondört günden, b) … yirmi günden, c) … Az olamaz." is one unit,
as Turkish grammar has it.
"""

from __future__ import annotations

import json
import logging
import math
import re
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from ragcore.core import FALLBACK_ANSWER, Source, prefix_tokens, turkish_lower, words
from ragcore.documents import ARTICLE_RE, sentence_units

log = logging.getLogger(__name__)

# Shown by the UI (badge tooltip) next to a quoted answer; no longer part of the answer text.
EXTRACTIVE_NOTICE = ("Alıntı modu: dil modeli kullanılmadı; cevap üretilmedi, dokümanlardaki ilgili "
                     "cümleler aynen aktarılıyor.")
MODEL_FILE = Path(__file__).resolve().parents[1] / "measured" / "extractive.json"
LEXICAL_MODEL = "lexical"  # the model for an answerer without an embedder
MAX_SENTENCES = 2
MAX_CHARS = 400
MIN_CHARS = 12  # shorter pieces ("(2)", "a) İşveren;", "Az olamaz.") answer nothing on their own
ELLIPSIS = "…"
MIN_CLIP_CHARS = 100  # a second sentence is clipped to the room left only if that room is this large


class ExtractiveModelError(RuntimeError):
    """ragcore/measured/extractive.json is missing or does not describe a usable model."""


# ----------------------------------------------------------------------------- sentences

_CLOSERS = "\"”’')]»"
_TERMINAL = ".!?…"
_LEAD_IN = ":;"
# A stop after an initial, a Roman numeral or a title is not a sentence end ("Papa X. Leo",
# "Muhammed b. Musa", "Hz. Ali"); the chunker may still cut there, the quote must not.
_ABBREVIATION_END = re.compile(
    r"(?:^|[\s(])(?:[A-ZÇĞİÖŞÜ]|[IVXLC]+|b|Hz|Dr|Prof|Doç|St|vb|vs|bkz|Sn|No|Yrd|Av|Müh|Op|Uzm|Mr|Mrs)\.$")
# An amendment note printed inside a law's text: "(Ek cümle: 10/9/2014-6552/5 md.)".
_AMENDMENT = re.compile(r"^\((?:Ek|Değişik|Mülga|İptal|Yeniden düzenleme)[^()]*(?:\([^()]*\)[^()]*)*\)$")
_UPPER_START = re.compile(r"^[A-ZÇĞİÖŞÜÂÎÛ]")
_ARTICLE_MARKER_END = re.compile(r"(?:MADDE|Madde)\s+\d+(?:/[A-Za-zÇĞİÖŞÜçğıöşü])?\s*[–—-]$")


@dataclass(frozen=True)
class Candidate:
    """One quotable unit of a source: a sentence, or a legal list kept as the sentence it is."""

    number: int  # 1-based position of its source in the context
    text: str  # verbatim, whitespace collapsed
    position: int  # index among its source's units


def _ending(text: str) -> str:
    """The last character that is not a closing quote or bracket."""
    stripped = text.rstrip().rstrip(_CLOSERS)
    return stripped[-1:] if stripped else ""


def _is_heading(text: str) -> bool:
    """A title, an article marker with its title ("… bildirimi MADDE 14 –"), or an amendment note."""
    if _AMENDMENT.match(text):
        return True
    if _ARTICLE_MARKER_END.search(text):
        return True
    # a title line: capitalised, short, no digits, no closing punctuation ("Kapsam ve istisnalar")
    return (_ending(text) not in _TERMINAL + _LEAD_IN + ",)" and len(text) <= 120
            and not re.search(r"\d", text) and bool(_UPPER_START.match(text)))


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """Spans of the quotable units of `text`, in order (headings included; see `split_sentences`).

    The chunker's sentence and list-item units (`ragcore.documents.chunking.sentence_units`: one rule for
    sentence ends in the whole app), cut after an article marker "MADDE n –" so the heading stands
    alone, then re-joined where the text goes on: a piece ending in "," or without a stop, a lead-in
    ending in ":" / ";", or a stop after an initial, is continued by the next piece (never across
    an article marker or a blank line) while the whole fits MAX_CHARS.
    """
    cuts = {0, len(text)}
    for start, end in sentence_units(text, 0, len(text)):
        cuts.update((start, end))
    markers = {m.end() for m in ARTICLE_RE.finditer(text)}
    cuts.update(markers)
    pieces = []
    ordered = sorted(cuts)
    for start, end in zip(ordered, ordered[1:], strict=False):
        while start < end and text[start].isspace():
            start += 1
        while end > start and text[end - 1].isspace():
            end -= 1
        if start < end:
            pieces.append((start, end))
    spans: list[tuple[int, int]] = []
    for start, end in pieces:
        if spans:
            prev_start, prev_end = spans[-1]
            previous = text[prev_start:prev_end]
            boundary = any(prev_end <= m <= start for m in markers) or "\n\n" in text[prev_end:start]
            ending = _ending(previous)
            open_end = bool(ending) and ending not in _TERMINAL
            continues = (open_end and not _is_heading(_collapse(previous))) or _ABBREVIATION_END.search(previous)
            if continues and not boundary and len(_collapse(text[prev_start:end])) <= MAX_CHARS:
                spans[-1] = (prev_start, end)
                continue
        spans.append((start, end))
    return spans


def _collapse(text: str) -> str:
    return " ".join(text.split())


def split_sentences(text: str) -> list[str]:
    """The quotable units of a chunk: no headings, no fragments too short to answer anything."""
    units = (_collapse(text[a:b]) for a, b in sentence_spans(text))
    return [u for u in units if len(u) >= MIN_CHARS and not _is_heading(u)]


def candidates(sources: Sequence[Source]) -> list[Candidate]:
    """Every quotable unit of the context, each text once (chunk overlap repeats sentences)."""
    seen: set[str] = set()
    out: list[Candidate] = []
    for number, source in enumerate(sources, start=1):
        units = split_sentences(source.text)
        for position, unit in enumerate(units):
            if unit not in seen:
                seen.add(unit)
                out.append(Candidate(number, unit, position))
    return out


# ----------------------------------------------------------------------------- what is asked

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


def _starts(token: str, stems: Sequence[str]) -> bool:
    return any(token.startswith(stem) for stem in stems)


@lru_cache(maxsize=4096)
def asked(question: str) -> Asked:
    """Question words → the kind of fact the answer must contain."""
    tokens = words(question)
    text = " ".join(tokens)
    amount = date = person = place = False
    unit = which = ""
    for i, token in enumerate(tokens):
        following = tokens[i + 1] if i + 1 < len(tokens) else ""
        if token.startswith("kaç"):
            if following.startswith(("yılında", "tarihinde", "senesinde")):
                date = True
            else:
                amount = True
                unit = following[:3] if following and not token.startswith("kaçıncı") else unit
        elif token in ("yüzde",):
            amount = True
        elif re.fullmatch(r"kim(?:ler)?(?:dir|dır|in|e|i|den|le|lerdir|lerin|lere|leri)?", token):
            person = True
        elif token.startswith("nere"):
            place = True
        elif token == "hangi" and following:
            which = following[:4]
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


# ----------------------------------------------------------------------------- features


def _overlap(question: str, texts: Sequence[str], length: int) -> np.ndarray:
    """Idf-weighted share of the question's prefix tokens present in each text (idf over the texts)."""
    query = set(prefix_tokens(question, length))
    token_sets = [set(prefix_tokens(t, length)) for t in texts]
    df = Counter(t for tokens in token_sets for t in tokens & query)
    n = len(texts)
    weight = {t: math.log((n + 1) / (df.get(t, 0) + 0.5)) for t in query}
    total = sum(weight.values()) or 1.0
    return np.array([sum(weight[t] for t in tokens & query) / total for tokens in token_sets], dtype=float)


def _relative(values: np.ndarray) -> np.ndarray:
    """Min-max within the candidates: independent of the scale of one embedding model."""
    span = float(values.max() - values.min()) if len(values) else 0.0
    return (values - values.min()) / span if span > 0 else np.ones_like(values)


def _match_features(question: str, cands: Sequence[Candidate]) -> np.ndarray:
    ask = asked(question)
    q_tokens = set(prefix_tokens(question, 5))
    q_numbers = facts(question).numbers
    rows = []
    for cand in cands:
        f = facts(cand.text)
        new_numbers = f.numbers - q_numbers
        amount = ask.amount and bool(new_numbers)
        unit = bool(ask.unit) and bool(new_numbers) and ask.unit in f.units
        date = ask.date and bool(f.dates - q_tokens - q_numbers)
        person = ask.person and (bool(f.names - q_tokens) or f.institutions)
        place = ask.place and bool(f.places - q_tokens)
        which = bool(ask.which) and any(t.startswith(ask.which) for t in prefix_tokens(cand.text, 5))
        rows.append((amount, unit, date, person, place, which))
    return np.array(rows, dtype=float).reshape(len(cands), 6)


FEATURES: tuple[str, ...] = (
    "cosine_relative",  # (cos − min) / (max − min) over the candidates; 0 without an embedder
    "cosine_best",  # 1 for the candidate the embedder likes most
    "overlap",  # idf-weighted share of the question's prefix-5 tokens in the sentence
    "overlap_prefix4",  # the same with 4-letter prefixes (kazası / kazalarını)
    "overlap_relative",  # overlap_prefix4 / its best value among the candidates
    "asks_amount_has_number",
    "asks_unit_has_number_unit",  # "kaç gün" and "üç iş günü" / "on gün"
    "asks_date_has_date",
    "asks_person_has_name",
    "asks_place_has_place",
    "asks_which_has_noun",  # "hangi şehir" and "şehir…" in the sentence
    "length",  # characters / MAX_CHARS, capped at 1
    "source_rank",  # 1 / rank of the sentence's source
    "first_in_source",
)


def feature_matrix(question: str, cands: Sequence[Candidate], cosine: np.ndarray | None) -> np.ndarray:
    """(len(cands), len(FEATURES)) in FEATURES order; `cosine` of each candidate with the question."""
    n = len(cands)
    texts = [c.text for c in cands]
    if cosine is None:
        cos_rel = np.zeros(n)
        cos_best = np.zeros(n)
    else:
        cosine = np.asarray(cosine, dtype=float)
        cos_rel = _relative(cosine)
        cos_best = (cosine >= cosine.max()).astype(float) if n else np.zeros(0)
    overlap4 = _overlap(question, texts, 4)
    columns = [
        cos_rel,
        cos_best,
        _overlap(question, texts, 5),
        overlap4,
        overlap4 / overlap4.max() if n and overlap4.max() > 0 else np.zeros(n),
        *_match_features(question, cands).T,
        np.array([min(len(t), MAX_CHARS) / MAX_CHARS for t in texts], dtype=float),
        np.array([1.0 / c.number for c in cands], dtype=float),
        np.array([float(c.position == 0) for c in cands], dtype=float),
    ]
    return np.column_stack(columns) if n else np.zeros((0, len(FEATURES)))


# ----------------------------------------------------------------------------- the model


@dataclass(frozen=True)
class SentenceModel:
    """Logistic regression over named features, and the selection ratio tuned with it."""

    name: str
    features: tuple[str, ...]
    coefficients: np.ndarray
    intercept: float
    second_ratio: float  # a second sentence needs p2 ≥ second_ratio · p1

    def probabilities(self, matrix: np.ndarray) -> np.ndarray:
        columns = [FEATURES.index(f) for f in self.features]
        z = matrix[:, columns] @ self.coefficients + self.intercept
        return 1.0 / (1.0 + np.exp(-z))


def _parse_model(name: str, entry: dict) -> SentenceModel:
    try:
        features = tuple(entry["features"])
        coefficients = np.asarray(entry["coefficients"], dtype=float)
        intercept = float(entry["intercept"])
        ratio = float(entry["selection"]["second_ratio"])
    except (KeyError, TypeError, ValueError) as exc:
        raise ExtractiveModelError(f"{MODEL_FILE.name}: model {name!r} is incomplete ({exc!r})") from exc
    unknown = [f for f in features if f not in FEATURES]
    if unknown:
        raise ExtractiveModelError(f"{MODEL_FILE.name}: model {name!r} uses unknown features {unknown}")
    if coefficients.shape != (len(features),) or not np.all(np.isfinite(coefficients)) or not math.isfinite(intercept):
        raise ExtractiveModelError(f"{MODEL_FILE.name}: model {name!r} needs one finite coefficient per feature")
    if not 0.0 <= ratio <= 1.0:
        raise ExtractiveModelError(f"{MODEL_FILE.name}: model {name!r} second_ratio {ratio} outside [0, 1]")
    return SentenceModel(name, features, coefficients, intercept, ratio)


@dataclass(frozen=True)
class ModelFile:
    models: dict[str, SentenceModel]
    fallback: str  # the model for an embedder the file has no coefficients for

    def for_embedder(self, embedder: object | None) -> SentenceModel:
        if embedder is None:
            return self.models[LEXICAL_MODEL]
        name = getattr(embedder, "name", "")
        if name in self.models:
            return self.models[name]
        _log_fallback(name, self.fallback)
        return self.models[self.fallback]


@lru_cache(maxsize=16)
def _log_fallback(name: str, fallback: str) -> None:
    log.info("extractive: no sentence model for embedder %r; using %r (its features are scale-free)", name, fallback)


def load_model_file(path: Path = MODEL_FILE) -> ModelFile:
    """Read and validate the measured model file (raises ExtractiveModelError)."""
    try:
        payload = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise ExtractiveModelError(f"{path} is missing: run `python scripts/train_extractive.py`") from exc
    except (OSError, json.JSONDecodeError) as exc:
        raise ExtractiveModelError(f"{path} cannot be read as JSON: {exc}") from exc
    if not isinstance(payload, dict) or not isinstance(payload.get("models"), dict):
        raise ExtractiveModelError(f"{path}: no 'models' object")
    models = {name: _parse_model(name, entry) for name, entry in payload["models"].items()}
    fallback = payload.get("fallback_model")
    if LEXICAL_MODEL not in models or fallback not in models:
        raise ExtractiveModelError(f"{path}: needs a {LEXICAL_MODEL!r} model and a 'fallback_model' among the models")
    return ModelFile(models, fallback)


@lru_cache(maxsize=1)
def model_file() -> ModelFile:
    """The shipped model file, loaded once per process."""
    return load_model_file(MODEL_FILE)


# ----------------------------------------------------------------------------- ranking and selection


@dataclass(frozen=True)
class Passage:
    number: int  # 1-based position of its source in the context
    text: str
    score: float  # the model's probability that the sentence holds the answer


def cosines(embedder: object, question: str, texts: Sequence[str]) -> np.ndarray:
    """Cosine of each text (embedded as a passage) with the question (embedded as a query)."""
    query = np.asarray(embedder.embed_queries([question]), dtype=np.float32)[0]  # type: ignore[attr-defined]
    passages = np.asarray(embedder.embed_passages(list(texts)), dtype=np.float32)  # type: ignore[attr-defined]
    return passages @ query


def rank_passages(question: str, sources: Sequence[Source], embedder: object | None,
                  model: SentenceModel | None = None) -> list[Passage]:
    """Every quotable unit of the context with the model's probability, most probable first."""
    cands = candidates(sources)
    if not cands:
        return []
    model = model or model_file().for_embedder(embedder)
    uses_cosine = any(f.startswith("cosine") for f in model.features)
    cosine = cosines(embedder, question, [c.text for c in cands]) if uses_cosine and embedder is not None else None
    if uses_cosine and cosine is None:
        raise ExtractiveModelError(f"sentence model {model.name!r} needs an embedder")
    probability = model.probabilities(feature_matrix(question, cands, cosine))
    order = sorted(range(len(cands)), key=lambda i: (-probability[i], cands[i].number, cands[i].position))
    return [Passage(cands[i].number, cands[i].text, float(probability[i])) for i in order]


def clip(text: str, question: str, limit: int = MAX_CHARS) -> str:
    """A verbatim window of at most `limit` characters, "…" where cut, placed on the most of the
    question's words (4-letter prefixes): the answer sits next to what the question mentions."""
    if len(text) <= limit:
        return text
    wanted = set(prefix_tokens(question, 4))
    spans = [(m.start(), m.end(), turkish_lower(m.group())[:4] in wanted) for m in re.finditer(r"\S+", text)]
    budget = limit - 2 * len(ELLIPSIS)
    best, best_hits = None, -1
    right = hits = 0
    for left in range(len(spans)):
        right = max(right, left)
        if right == left:
            hits = 0
        while right < len(spans) and spans[right][1] - spans[left][0] <= budget:
            hits += spans[right][2]
            right += 1
        if right > left:
            if hits > best_hits:
                best, best_hits = (spans[left][0], spans[right - 1][1]), hits
            hits -= spans[left][2]
    if best is None:
        return text[:budget] + ELLIPSIS
    hit_spans = [sp for sp in spans if sp[2] and best[0] <= sp[0] and sp[1] <= best[1]]
    if hit_spans:  # centre the window on the question's words it holds
        centre = (hit_spans[0][0] + hit_spans[-1][1]) / 2
        first = next((i for i, sp in enumerate(spans) if sp[0] >= centre - budget / 2), 0)
        first = min(first, next(i for i, sp in enumerate(spans) if sp[0] == hit_spans[0][0]))
        last = first
        while last + 1 < len(spans) and spans[last + 1][1] - spans[first][0] <= budget:
            last += 1
        while first > 0 and spans[last][1] - spans[first - 1][0] <= budget:
            first -= 1
        best = (spans[first][0], spans[last][1])
    start, end = best
    return (ELLIPSIS if start > 0 else "") + text[start:end] + (ELLIPSIS if end < len(text) else "")


def select_passages(passages: Sequence[Passage], question: str = "", *, ratio: float,
                    max_sentences: int = MAX_SENTENCES, max_chars: int = MAX_CHARS) -> list[Passage]:
    """The most probable unit, and the next ones whose probability is within `ratio` of it, while the
    quote stays within `max_sentences` units and `max_chars` characters: a comparable sentence
    longer than the room left is clipped to it (verbatim, "…"), unless that room is too small."""
    if not passages:
        return []
    first = passages[0]
    chosen = [Passage(first.number, clip(first.text, question, max_chars), first.score)]
    used = len(chosen[0].text)
    for passage in passages[1:]:
        if len(chosen) >= max_sentences or passage.score < ratio * first.score:
            break
        room = max_chars - used
        if len(passage.text) <= room or room >= MIN_CLIP_CHARS:
            chosen.append(Passage(passage.number, clip(passage.text, question, room), passage.score))
            used += len(chosen[-1].text)
    return chosen


def answer_passages(question: str, sources: Sequence[Source], embedder: object | None) -> list[Passage]:
    """The passages the extractive answer quotes (at most two sentences, 400 characters)."""
    model = model_file().for_embedder(embedder)
    return select_passages(rank_passages(question, sources, embedder, model), question, ratio=model.second_ratio)


def quote_line(passage: Passage) -> str:
    return f"> “{passage.text}” [{passage.number}]"


def quote(passages: Sequence[Passage]) -> str:
    """Quoted passages, one per line, each with its [n] citation."""
    return "\n".join(quote_line(p) for p in passages)


class ExtractiveGenerator:
    """Quotes the one or two context sentences that best answer the question, with [n] markers."""

    kind = "extractive"
    model = "extractive"
    label = "extractive"

    def __init__(self, embedder: object | None = None) -> None:
        self.embedder = embedder
        model_file().for_embedder(embedder)  # a missing or broken model file fails here, not mid-answer

    def stream(self, messages: list[dict], sources: Sequence[Source], question: str) -> Iterator[str]:
        passages = answer_passages(question, sources, self.embedder)
        if not passages:
            yield FALLBACK_ANSWER
            return
        for index, passage in enumerate(passages):
            yield ("\n" if index else "") + quote_line(passage)
