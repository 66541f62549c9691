"""Measured defaults as data: `ragcore/measured/*.json`, one entry per recorded embedding index name.

Which fusion mode `RETRIEVAL_MODE=auto` uses, its dense weight, and the refusal threshold are
results of measurements, not choices made in code; they depend on the embedding model. Each
file holds a `default` entry (what an unmeasured model gets, and why) and `entries` keyed by the
recorded index name (`Embedder.name`), and every entry says how, when and on what it was
measured. Tuning and calibration scripts write their results with `write_measured`, so the
numbers in force are always the output of a run, never retyped.

Files: `retrieval.json` (mode, weight), `thresholds.json` (signal, value), `abstention.json` (the
three-outcome gate's model and operating points, ragcore.retrieval.abstention).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from ragcore.retrieval.modes import MODES

MEASURED_DIR = Path(__file__).resolve().parents[1] / "measured"
RETRIEVAL_FILE = "retrieval.json"
THRESHOLDS_FILE = "thresholds.json"
ABSTENTION_FILE = "abstention.json"
DESCRIPTION_KEYS = ("measured", "when", "on")
_REQUIRED = {RETRIEVAL_FILE: ("mode", "weight"), THRESHOLDS_FILE: ("signal", "value"),
             ABSTENTION_FILE: ("features", "coefficients", "intercept", "means", "scales", "answer_at", "closest_at")}


class MeasuredDataError(ValueError):
    """A measured-defaults file or entry is malformed; the message names the file and key."""


@dataclass(frozen=True)
class RetrievalDefault:
    """The auto mode and dense weight for one embedder, and where they come from."""

    mode: str
    weight: float
    measured: str
    tuned: bool  # False: the file's "default" entry (this embedder was not tuned)


@dataclass(frozen=True)
class ThresholdDefault:
    signal: str
    value: float
    measured: str
    calibrated: bool  # False: the model-independent default


@lru_cache(maxsize=8)
def _load(path: Path, mtime_ns: int) -> dict:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise MeasuredDataError(f"cannot read measured defaults {path}: {exc}") from exc
    if not isinstance(data.get("default"), dict) or not isinstance(data.get("entries"), dict):
        raise MeasuredDataError(f"{path}: needs a \"default\" object and an \"entries\" object")
    return data


def load(file: str, folder: Path = MEASURED_DIR) -> dict:
    """The parsed file (re-read when it changes on disk, e.g. after `write_measured`)."""
    path = Path(folder) / file
    try:
        mtime = path.stat().st_mtime_ns
    except OSError as exc:
        raise MeasuredDataError(f"measured defaults missing: {path}") from exc
    return _load(path, mtime)


def _entry(file: str, name: str, folder: Path) -> tuple[dict, bool]:
    data = load(file, folder)
    entry = data["entries"].get(name)
    return (entry, True) if entry is not None else (data["default"], False)


def retrieval_default(name: str, folder: Path = MEASURED_DIR) -> RetrievalDefault:
    """Mode and weight measured for the index name; the file's default (rrf) when not tuned.

    An entry measured for RRF has no weight of its own; RETRIEVAL_MODE=weighted then uses the
    default entry's weight.
    """
    entry, tuned = _entry(RETRIEVAL_FILE, name, folder)
    weight = entry.get("weight")
    if weight is None:
        weight = load(RETRIEVAL_FILE, folder)["default"]["weight"]
    return RetrievalDefault(str(entry["mode"]), float(weight), str(entry["measured"]), tuned)


def threshold_default(name: str, folder: Path = MEASURED_DIR) -> ThresholdDefault:
    """The refusal threshold calibrated for the index name, else the model-independent default."""
    entry, calibrated = _entry(THRESHOLDS_FILE, name, folder)
    return ThresholdDefault(str(entry["signal"]), float(entry["value"]), str(entry["measured"]), calibrated)


def write_measured(file: str, name: str, entry: dict, folder: Path = MEASURED_DIR) -> Path:
    """Record (or replace) the entry for index name `name` in a measured-defaults file.

    `entry` holds the file's values (retrieval: mode, weight; thresholds: signal, value) and the
    description keys `measured` (how, with the headline figures), `when` and `on` (data, machine).
    The file is rewritten atomically with its other entries kept; commit it with the run that
    produced it.
    """
    if file not in _REQUIRED:
        raise MeasuredDataError(f"unknown measured-defaults file {file!r}; one of {', '.join(_REQUIRED)}")
    missing = [key for key in (*_REQUIRED[file], *DESCRIPTION_KEYS) if key not in entry]
    if missing:
        raise MeasuredDataError(f"{file} entry for {name!r} lacks {', '.join(missing)}")
    if file == RETRIEVAL_FILE:
        if entry["mode"] not in MODES:
            raise MeasuredDataError(f"{file}: mode {entry['mode']!r} is not one of {', '.join(MODES)}")
    path = Path(folder) / file
    data = load(file, folder)
    data = {**data, "entries": {**data["entries"], name: dict(entry)}}
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(data, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    os.replace(tmp, path)
    return path
