"""Embedders: Ollama over real HTTP against the fake server, the embedded USE, the cache, the choice."""

from __future__ import annotations

import numpy as np
import pytest

from ragcore.embeddings import (
    CachedEmbedder,
    Embedder,
    EmbeddingError,
    OllamaEmbedder,
    USEEmbedder,
    choose_embedding_backend,
    make_embedder,
)
from ragcore.ollama import OllamaStatus
from tests.fakes import fake_vector


def ollama(fake_llm, **kwargs) -> OllamaEmbedder:
    return OllamaEmbedder(fake_llm.url, "bge-m3", backoff=0.01, **kwargs)


def test_ollama_embeds_in_batches_with_normalised_rows(fake_llm):
    embedder = ollama(fake_llm, batch_size=4)
    texts = [f"metin {i}" for i in range(10)]
    vectors = embedder.embed(texts)
    assert isinstance(embedder, Embedder)
    assert embedder.name == "ollama:bge-m3" and embedder.dim == 1024
    assert vectors.shape == (10, 1024) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert np.allclose(vectors[3], fake_vector("metin 3", 1024), atol=1e-5)
    assert [len(b["input"]) for b in fake_llm.bodies("/api/embed")] == [4, 4, 2]
    assert all(b["model"] == "bge-m3" for b in fake_llm.bodies("/api/embed"))


def test_unknown_model_dimension_is_discovered_from_a_response(fake_llm):
    fake_llm.behaviour.models.append("tiny-embed:latest")
    fake_llm.behaviour.embed_dim = 64
    embedder = OllamaEmbedder(fake_llm.url, "tiny-embed")
    assert embedder.dim == 64
    assert embedder.embed(["a", "b"]).shape == (2, 64)


def test_missing_model_says_how_to_pull_it(fake_llm):
    embedder = OllamaEmbedder(fake_llm.url, "bge-m3-missing", backoff=0.01)
    with pytest.raises(EmbeddingError, match="ollama pull bge-m3-missing"):
        embedder.embed(["soru"])
    assert len(fake_llm.bodies("/api/embed")) == 1  # a 404 is not retried


def test_server_down_is_a_clear_message():
    embedder = OllamaEmbedder("http://127.0.0.1:9", "bge-m3", retries=1, backoff=0.01)
    with pytest.raises(EmbeddingError, match="Ollama'ya ulaşılamıyor"):
        embedder.embed(["soru"])


def test_503_is_retried_with_backoff_then_succeeds(fake_llm):
    fake_llm.behaviour.fail_first_n = 2
    vectors = ollama(fake_llm, retries=3).embed(["soru"])
    assert vectors.shape == (1, 1024)
    assert len(fake_llm.bodies("/api/embed")) == 3


def test_persistent_500_gives_up_after_the_retries(fake_llm):
    fake_llm.behaviour.fail_status = 500
    with pytest.raises(EmbeddingError, match="3 denemede"):
        ollama(fake_llm, retries=2).embed(["soru"])
    assert len(fake_llm.bodies("/api/embed")) == 3


def test_use_embedder_gives_512_d_unit_vectors_that_match_meaning():
    embedder = USEEmbedder(batch_size=2)
    vectors = embedder.embed(["İşveren risk değerlendirmesi yapar.", "Risk değerlendirmesini işveren yapar.",
                              "Yarın hava yağmurlu olacak."])
    assert embedder.name == "use-multilingual-v3" and embedder.dim == 512
    assert vectors.shape == (3, 512) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert vectors[0] @ vectors[1] > vectors[0] @ vectors[2]
    assert embedder.embed([]).shape == (0, 512)


def test_cache_serves_repeated_texts_from_disk(fake_llm, tmp_path):
    cached = CachedEmbedder(ollama(fake_llm), tmp_path)
    first = cached.embed(["bir", "iki"])
    again = CachedEmbedder(ollama(fake_llm), tmp_path).embed(["iki", "bir", "üç"])
    assert np.allclose(again[0], first[1]) and np.allclose(again[1], first[0])
    assert [b["input"] for b in fake_llm.bodies("/api/embed")] == [["bir", "iki"], ["üç"]]
    assert cached.name == "ollama:bge-m3" and cached.dim == 1024


@pytest.mark.parametrize(
    ("backend", "status", "kind", "why"),
    [
        ("use", OllamaStatus(True, ("bge-m3:latest",)), "use", "EMBED_BACKEND=use"),
        ("ollama", OllamaStatus(False), "ollama", "EMBED_BACKEND=ollama"),
        ("auto", OllamaStatus(True, ("bge-m3:latest",)), "ollama", "has bge-m3"),
        ("auto", OllamaStatus(True, ("qwen2.5:7b-instruct",)), "use", "ollama pull bge-m3"),
        ("auto", OllamaStatus(False, (), "ConnectError"), "use", "not reachable"),
    ],
)
def test_choose_embedding_backend(settings, backend, status, kind, why):
    choice = choose_embedding_backend(settings.with_(embed_backend=backend), status)
    assert choice.kind == kind and why in choice.reason


def test_make_embedder_auto_uses_a_reachable_ollama(settings, fake_llm):
    embedder = make_embedder(settings.with_(embed_backend="auto", ollama_base_url=fake_llm.url))
    assert embedder.kind == "ollama" and embedder.embed(["x"]).shape == (1, 1024)
    assert make_embedder(settings).kind == "use"
