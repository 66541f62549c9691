"""The extractive answerer's sentence model: its features, and the measured model file.

A small logistic regression over a handful of features of (question, candidate sentence, its
source): embedding similarity (question as a query, sentences as passages), idf-weighted lexical
overlap, whether the sentence holds what the question asks for (`ragcore.answer.question_types`),
length, source rank and position. The coefficients are data, not code:
`python -m eval fit extractive` fits them on TQuAD *train* questions and writes
`ragcore/measured/extractive.json`, which this module loads on first use (a missing or invalid
file is an error). Applying them needs numpy only.
"""

from __future__ import annotations

import json
import logging
import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from ragcore.answer.question_types import asked, facts
from ragcore.answer.sentences import MAX_CHARS, Candidate
from ragcore.core import prefix_tokens
from ragcore.embed import CachedEmbedder

log = logging.getLogger(__name__)

MODEL_FILE = Path(__file__).resolve().parents[1] / "measured" / "extractive.json"
LEXICAL_MODEL = "lexical"  # the model for an answerer without an embedder


class ExtractiveModelError(RuntimeError):
    """ragcore/measured/extractive.json is missing or does not describe a usable model."""


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
    "cosine_rank",  # 1 / the candidate's rank by cosine: the second and third best still count
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
    "source_overlap",  # overlap_prefix4 of the whole source chunk: an everyday question may share
    # its words with the article (its heading, the sentence before) rather than with the sentence
)
TYPE_MATCH_FEATURES = tuple(f for f in FEATURES if f.startswith("asks_"))  # the question asks it, the sentence has it


def cosines(embedder: object, question: str, texts: Sequence[str],
            query_vector: np.ndarray | None = None) -> np.ndarray:
    """Cosine of each text (embedded as a passage) with the question (embedded as a query, unless
    retrieval's `query_vector` is given).

    The sentences are read from the shared passage cache but never written to it: which sentences
    get quoted depends on the question, and a row one user's question wrote would make the next
    user's answer quoting that sentence faster (issue 21)."""
    if query_vector is None:
        query_vector = embedder.embed_queries([question])[0]  # type: ignore[attr-defined]
    query = np.asarray(query_vector, dtype=np.float32)
    if isinstance(embedder, CachedEmbedder):
        passages = embedder.embed_passages(list(texts), write=False)
    else:
        passages = np.asarray(embedder.embed_passages(list(texts)), dtype=np.float32)  # type: ignore[attr-defined]
    return passages @ query


def _source_overlap(question: str, cands: Sequence[Candidate], source_texts: Sequence[str] | None) -> np.ndarray:
    """Each candidate's source chunk's overlap with the question (idf over the context's chunks)."""
    if not source_texts or not cands:
        return np.zeros(len(cands))
    per_source = _overlap(question, source_texts, 4)
    return np.array([per_source[c.number - 1] if 0 < c.number <= len(source_texts) else 0.0 for c in cands])


def feature_matrix(question: str, cands: Sequence[Candidate], cosine: np.ndarray | None,
                   source_texts: Sequence[str] | None = None) -> np.ndarray:
    """(len(cands), len(FEATURES)) in FEATURES order; `cosine` of each candidate with the question,
    `source_texts` the context's chunks in order (a candidate's `number` is its 1-based index)."""
    n = len(cands)
    texts = [c.text for c in cands]
    if cosine is None:
        cos_rel = cos_best = cos_rank = np.zeros(n)
    else:
        cosine = np.asarray(cosine, dtype=float)
        cos_rel = _relative(cosine)
        cos_best = (cosine >= cosine.max()).astype(float) if n else np.zeros(0)
        cos_rank = 1.0 / (1.0 + np.argsort(np.argsort(-cosine, kind="stable"), kind="stable"))
    overlap4 = _overlap(question, texts, 4)
    columns = [
        cos_rel,
        cos_best,
        cos_rank,
        _overlap(question, texts, 5),
        overlap4,
        overlap4 / overlap4.max() if n and overlap4.max() > 0 else np.zeros(n),
        *_match_features(question, cands).T,
        np.array([min(len(t), MAX_CHARS) / MAX_CHARS for t in texts], dtype=float),
        np.array([1.0 / c.number for c in cands], dtype=float),
        np.array([float(c.position == 0) for c in cands], dtype=float),
        _source_overlap(question, cands, source_texts),
    ]
    return np.column_stack(columns) if n else np.zeros((0, len(FEATURES)))


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
        raise ExtractiveModelError(f"{path} is missing: run `python -m eval fit extractive`") from exc
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
