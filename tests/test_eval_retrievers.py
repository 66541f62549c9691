"""Retrievers: vectorised BM25 equals rank-bm25, fusion by hand, the embedding cache, a small sweep."""

from __future__ import annotations

import hashlib
import json
import uuid

import numpy as np
import pytest
from rank_bm25 import BM25Okapi

from eval import retrievers as rv
from eval import tquad
from eval.cli import main as cli_main
from eval.report import load_run, write_retrieval_run
from eval.sweep import SweepConfig, make_workspace, run_sweep
from tests.conftest import TQUAD_DIR

needs_tquad = pytest.mark.needs_data("tquad")


class HashEmbedder:
    """Deterministic fake embedder: bag of hashed prefix-5 tokens, L2-normalised; counts its calls.

    Symmetric (questions and passages alike), like the USE."""

    kind = "fake"
    model = "hash-bow"
    name = "hash-bow-64"
    dim = 64

    def __init__(self):
        self.embedded = 0

    def embed_queries(self, texts):
        return self._embed(texts)

    def embed_passages(self, texts):
        return self._embed(texts)

    def _embed(self, texts):
        self.embedded += len(texts)
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, text in enumerate(texts):
            for tok in rv.tokenize_all([text], "prefix5")[0]:
                out[i, int(hashlib.md5(tok.encode()).hexdigest(), 16) % self.dim] += 1
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.where(norms == 0, 1, norms)


@pytest.fixture(scope="module")
def corpus():
    return tquad.cached_corpus(str(TQUAD_DIR))


@needs_tquad
@pytest.mark.parametrize("tokenizer", ["plain", "prefix5", "snowball-stop"])
def test_vectorised_bm25_equals_rank_bm25(corpus, tokenizer):
    chunks = tquad.chunk_corpus(corpus, 1000).texts[:400]
    docs = rv.tokenize_all(chunks, tokenizer)
    ours, reference = rv.BM25Index(docs), BM25Okapi(docs)
    for q in corpus.dev_questions[:40]:
        query = rv.tokenize_all([q.question], tokenizer)[0]
        expected = reference.get_scores(query)
        got = ours.scores(query)
        np.testing.assert_allclose(got, expected, rtol=1e-9, atol=1e-9)
        top_expected = np.argsort(-np.round(expected, 9), kind="stable")[:10]
        top_got = rv.top_indices(np.round(got, 9)[None, :], 10)[0]
        assert list(top_got) == list(top_expected)


def test_bm25_negative_idf_uses_epsilon_floor_like_rank_bm25():
    docs = [["a", "b"], ["a", "c"], ["a", "d"], ["e"]]
    np.testing.assert_allclose(rv.BM25Index(docs).scores(["a", "a", "c"]), BM25Okapi(docs).get_scores(["a", "a", "c"]))


def test_top_indices_ties_by_lower_index_and_exclusions():
    scores = np.array([[1.0, 3.0, 3.0, 0.5, 2.0]])
    assert list(rv.top_indices(scores, 3)[0]) == [1, 2, 4]
    assert list(rv.top_indices(scores, 3, exclude=[[1]])[0]) == [2, 4, 0]
    assert list(rv.top_indices(scores, 7)[0]) == [1, 2, 4, 0, 3, -1, -1]


def test_rrf_by_hand():
    lexical = np.array([[3.0, 2.0, 1.0, 0.0]])
    dense = np.array([[0.1, 0.9, 0.5, 0.2]])
    fused = rv.rrf_scores([lexical, dense], 4, candidates=2)
    # lexical top-2: 0 (rank 1), 1 (rank 2); dense top-2: 1 (rank 1), 2 (rank 2)
    assert fused[0, 1] == pytest.approx(1 / 62 + 1 / 61)
    assert fused[0, 0] == pytest.approx(1 / 61)
    assert fused[0, 2] == pytest.approx(1 / 62)
    assert fused[0, 3] == -np.inf
    assert list(rv.top_indices(fused, 3)[0]) == [1, 0, 2]


def test_weighted_fusion_by_hand():
    lexical = np.array([[4.0, 2.0, 0.0]])
    dense = np.array([[0.2, 0.6, 1.0]])
    fused = rv.weighted_scores(dense, lexical, 0.25, candidates=3)
    # minmax lexical = 1, .5, 0; dense = 0, .5, 1
    np.testing.assert_allclose(fused[0], [0.75, 0.5, 0.25])
    excluded = rv.weighted_scores(dense, lexical, 0.25, exclude=[[0]], candidates=3)
    assert excluded[0, 0] == -np.inf


def test_lab_embedder_specs(settings):
    from eval.sweep import default_embedder_factory

    make = default_embedder_factory(settings)
    assert (make("e5").kind, make("e5").name) == ("e5", "e5-small-q4")
    assert make("use").name == "use-multilingual-v3" and make("default").kind == "use"  # settings: use
    assert make("bge-m3").name == "ollama:bge-m3"


def test_workspace_embeds_through_the_shared_cache(settings, session_db):
    """The lab's vectors come from public.embedding_cache: a second workspace embeds nothing."""
    texts = [f"laboratuvar önbelleği {uuid.uuid4().hex} {i}" for i in range(3)]
    first_model = HashEmbedder()
    first = make_workspace(settings, cache_db=session_db, embedder_factory=lambda spec: first_model, corpus=object())
    vectors = first.vectors("default", texts + texts[:1], "chunks", "p")
    assert first_model.embedded == 3  # the repeated text is embedded once
    assert first.embedder("default").stats() == {"hits": 1, "misses": 3}
    again_model = HashEmbedder()
    again = make_workspace(settings, cache_db=session_db, embedder_factory=lambda spec: again_model, corpus=object())
    np.testing.assert_array_equal(again.vectors("default", texts, "chunks", "p"), vectors[:3])
    assert again_model.embedded == 0
    again.vectors("default", texts, "questions", "q")  # questions are cached apart from passages
    assert again_model.embedded == 3
    with pytest.raises(ValueError, match="kind"):
        again.vectors("default", texts, "x", "passage")


def test_workspace_opens_its_cache_database_only_when_it_embeds(settings):
    ws = make_workspace(settings, embedder_factory=lambda spec: HashEmbedder(), corpus=object())
    assert ws.cache_db is None  # a BM25-only run never touches the database
    ws.vectors("default", ["bir metin"], "chunks", "p")
    assert ws.cache_db is not None and ws.owns_cache_db
    ws.close()
    assert ws.cache_db is None


def test_retriever_names():
    assert rv.make_retriever("bm25").tokenizer == "plain"
    assert rv.make_retriever("bm25-prefix5").name == "bm25-prefix5"
    assert rv.make_retriever("dense:bge-m3").spec == "bge-m3"
    assert rv.make_retriever("dense:e5").spec == "e5" and rv.make_retriever("hybrid:e5").dense.spec == "e5"
    assert isinstance(rv.make_retriever("hybrid"), rv.RRFRetriever)
    assert isinstance(rv.make_retriever("hybrid-weighted"), rv.WeightedRetriever)
    with pytest.raises(ValueError):
        rv.make_retriever("tfidf")


@needs_tquad
def test_small_sweep_writes_summary_and_per_question(settings, corpus, tmp_path, session_db):
    ws = make_workspace(settings, cache_db=session_db, embedder_factory=lambda spec: HashEmbedder(),
                        corpus=corpus)
    config = SweepConfig(retrievers=["bm25", "bm25-prefix5", "dense", "hybrid", "hybrid-weighted"],
                         chunk_sizes=[1000], limit=60, train_questions=40)
    stages = []
    result = run_sweep(settings, config, lambda stage, done, total: stages.append(stage), workspace=ws)
    summary = write_retrieval_run(result, tmp_path / "run", settings, embedders={"default": HashEmbedder()})
    assert summary["corpus"]["articles"] == 697 and summary["corpus"]["excluded_train"] == 56
    assert summary["corpus"]["chunks"]["1000"] > 1000
    assert [r["retriever"] for r in summary["results"]] == config.retrievers
    for row in summary["results"]:
        for metric in ("recall@1", "recall@5", "recall@10", "mrr@10", "ndcg@10"):
            lo, hi = row[metric]["ci"]
            assert lo <= row[metric]["mean"] <= hi
    assert 0.0 <= summary["tuning"]["hybrid-weighted@1000"]["weight"] <= 1.0
    assert {c["system"] for c in summary["comparisons"]} == {f"{n}@1000" for n in config.retrievers[1:]}
    assert any(s.startswith("chunking") for s in stages) and "bootstrap" in stages
    assert any(s.startswith("embedding") for s in stages)
    loaded, rows = load_run(tmp_path / "run")
    assert loaded["run"]["data"]["sha256"][tquad.DEV_FILE] == corpus.file_hashes[tquad.DEV_FILE]
    assert len(rows) == 60 and "rank:bm25@1000" in rows[0] and "top5:hybrid@1000" in rows[0]


@needs_tquad
def test_cli_retrieval_bm25_subset(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("TQUAD_DIR", str(TQUAD_DIR))
    out = tmp_path / "out"
    assert cli_main(["retrieval", "--retrievers", "bm25", "--chunk-sizes", "1000", "--limit", "50", "--quiet",
                     "--out", str(out)]) == 0
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    assert summary["results"][0]["retriever"] == "bm25"
    assert "recall@5" in capsys.readouterr().out
