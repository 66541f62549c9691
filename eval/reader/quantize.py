"""`python -m eval reader quantize`: what each export choice (int8, 4-bit blocks) keeps of a trained reader.

Why: r5's default export lost most of what training gained (docs/reader.md, round 22), while the
same network in fp32 scored as r4 did. Each choice is scored on the run's holdout pairs (never
trained on) with onnxruntime, as the app runs it, against the fp32 graph the export wrote.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import onnxruntime
from tqdm import tqdm

from eval.reader.data import Pair
from eval.reader.export import quantize
from eval.reader.train import holdout_metrics
from ragcore.reader import E5Tokenizer, load_weights

BATCH = 64


@dataclass(frozen=True)
class Choice:
    name: str
    per_channel: bool = False
    fp32_linears: tuple[str, ...] = ()
    weight_bits: int = 8
    block_size: int = 32
    int8_compute: bool = False


def ffn_outputs(layers: Sequence[int]) -> tuple[str, ...]:
    return tuple(f"layers.{i}.fo" for i in layers)


CHOICES = (
    Choice("int8 (the default)"),
    Choice("int8, per-channel weights", per_channel=True),
    Choice("int8, FFN outputs of layers 4-7 in fp32", fp32_linears=ffn_outputs(range(4, 8))),
    Choice("int8, every FFN output in fp32", fp32_linears=ffn_outputs(range(12))),
    Choice("4-bit weights in blocks of 32, fp32 activations", weight_bits=4, block_size=32),
    Choice("4-bit weights in blocks of 128, fp32 activations", weight_bits=4, block_size=128),
    Choice("4-bit weights in blocks of 32, multiplied in int8", weight_bits=4, block_size=32, int8_compute=True),
)


def model_inputs(pairs: Sequence[Pair], max_length: int) -> list[dict[str, np.ndarray]]:
    """The pairs as the app feeds them, in batches: tokenized and looked up once for every choice."""
    weights = load_weights()
    tokenizer = E5Tokenizer(weights)
    feeds = []
    for start in range(0, len(pairs), BATCH):
        batch = tokenizer.encode_pairs([(p.question, p.context) for p in pairs[start:start + BATCH]],
                                       max_length=max_length)
        feeds.append({"embeds": weights.word_rows(batch.ids), "mask": batch.mask})
    return feeds


def logits(model: Path, feeds: Sequence[dict[str, np.ndarray]], threads: int = 1) -> np.ndarray:
    """The model's logit for every pair."""
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = threads
    session = onnxruntime.InferenceSession(str(model), options, providers=["CPUExecutionProvider"])
    out = [session.run(["logits"], feed)[0] for feed in feeds]
    return np.concatenate(out) if out else np.zeros(0, dtype=np.float32)


def timed_logits(model: Path, feeds: Sequence[dict[str, np.ndarray]]) -> tuple[np.ndarray, float]:
    """`logits` on one thread and the seconds they took: comparable between choices of one run."""
    started = time.perf_counter()
    out = logits(model, feeds)
    return out, time.perf_counter() - started


def compare(fp32: Path, pairs: Sequence[Pair], max_length: int, choices: Sequence[Choice] = CHOICES) -> dict:
    """Per choice: the holdout figures, the drift from fp32, the file's size, and the seconds it takes
    to score every pair on one thread (what the format costs at run time, relative to the others)."""
    feeds = model_inputs(pairs, max_length)
    reference, seconds = timed_logits(fp32, feeds)
    rows = [{"choice": "fp32 (not shipped)", "bytes": fp32.stat().st_size, "seconds": seconds,
             **holdout_metrics(pairs, reference)}]
    with tempfile.TemporaryDirectory() as folder:
        for choice in tqdm(choices, desc="reader quantize", unit="choice"):
            model = Path(folder) / "reader.onnx"
            quantize(fp32, model, per_channel=choice.per_channel, fp32_linears=choice.fp32_linears,
                     weight_bits=choice.weight_bits, block_size=choice.block_size, int8_compute=choice.int8_compute)
            got, seconds = timed_logits(model, feeds)
            drift = np.abs(got - reference)
            rows.append({"choice": choice.name, **asdict(choice), "bytes": model.stat().st_size, "seconds": seconds,
                         "drift_mean": float(drift.mean()), "drift_p95": float(np.quantile(drift, 0.95)),
                         "drift_max": float(drift.max()), **holdout_metrics(pairs, got)})
    return {"pairs": len(pairs), "max_length": max_length, "rows": rows}
